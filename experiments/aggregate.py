"""Aggregate a sweep's units from the unit store without running anything (e.g. after an interrupted
run, or after SLURM jobs that wrote into a shared cache_dir):

    python experiments/aggregate.py -m <the sweep's own overrides> [reference=<csv>]
    python experiments/aggregate.py -m +experiment=paper_table cache_dir=/shared/fs/.cache
    -> retrofit_rmse.csv, retrofit_table.md, the plots (and decomposition files) in <results_dir>;
       with reference: reproduction.txt, non-zero exit unless every row reproduces that CSV

It takes the sweep's command line and aggregates exactly that sweep's units (as the sweep does at
its end), whatever else the cache holds; a unit without a current result is named and nothing is
written. Without -m it aggregates the one case the overrides describe, as a single run would.
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register
from retrofit.runner import console
from retrofit.runner.aggregate import accumulated, aggregate, headline, outputs
from retrofit.runner.collect import sweep_records
from retrofit.runner.config import case_from_hydra
from retrofit.runner.reproduce import verify
from retrofit.runner.schema import reference_of, results_dir_of

register("config")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:  # nothing per job: the sweep callback aggregates at the end
        return
    with exit_on_user_error():
        results_dir = results_dir_of(cfg, hydra_cfg)
        reference = reference_of(cfg, Path(hydra_cfg.runtime.cwd))
        with console.collected_notices() as notices:
            case = case_from_hydra(cfg, hydra_cfg)
        frame = aggregate(results_dir, accumulated(results_dir, sweep_records([case])))
        written = [results_dir / name for name in outputs(frame)]
        console.report(headline(frame), written, str(Path(hydra_cfg.runtime.output_dir)), notices)
        if reference is not None:
            verify(results_dir, reference)


if __name__ == "__main__":
    main()
