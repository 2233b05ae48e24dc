"""Aggregate a sweep's units from the unit store without running anything (e.g. after an interrupted
run, or after SLURM jobs that wrote into a shared cache_dir):

    python experiments/aggregate.py -m <the sweep's own overrides> [reference=<csv>]
    python experiments/aggregate.py -m +experiment=paper_table cache_dir=/shared/fs/.cache
    -> retrofit_rmse.csv, retrofit_table.md, the plots (and decomposition files) in <results_dir>;
       with reference: reproduction.txt, non-zero exit unless every row reproduces that CSV

It takes the sweep's command line and aggregates exactly that sweep's units (as the sweep does at
its end), whatever else the cache holds; a unit without a current result is named and nothing is
written. Without -m it aggregates the one case the overrides describe, as a single run would.
Configs: configs/config.yaml, the sweep's, with the aggregation's callback in place of the sweep's
(`AS_AGGREGATION`): each job is built as its case (data and host digests read, nothing fitted),
whose units' identities name their stored results (`retrofit.jobs.aggregate`).
"""

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import aggregate, register

register("config")  # this entry point's schema, before Hydra composes

AS_AGGREGATION = [
    "hydra.callbacks.check_sweep._target_=retrofit.jobs.aggregate.AggregateSweep",
    "hydra.job.name=aggregate",
]
"""Hydra overrides appended to the command line: a multirun reads its cases' stored units
(`retrofit.jobs.aggregate.AggregateSweep`) and logs under outputs/aggregate/."""


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:  # nothing per job: the callback aggregates at the end
        return
    with exit_on_user_error():
        aggregate.run(cfg, hydra_cfg)


if __name__ == "__main__":
    sys.argv += AS_AGGREGATION
    main()
