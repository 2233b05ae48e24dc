"""The retrofit sweep's entry point: one case (host × dataset × seed, every selected variant) per job.

    python experiments/sweep.py dataset=<name> seed=<n> results_dir=<dir>
    python experiments/sweep.py -m +experiment=paper_table      # the default grid (make retrofit)

Configs: configs/config.yaml. A single run writes its case's rows to <results_dir>/retrofit_rmse.csv;
a sweep (-m) writes every job's rows there at its end (`retrofit.runner.hydra_callbacks`), and with
reference=<csv> checks that they reproduce it. Bad input exits non-zero with `error: <what to fix>`.
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.runner.aggregate import aggregate
from retrofit.runner.case import run_case
from retrofit.runner.config import case_from_hydra, resolve


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    with exit_on_user_error():
        rows = run_case(case_from_hydra(cfg, hydra_cfg))
        if hydra_cfg.mode == RunMode.RUN:
            aggregate(resolve(Path(hydra_cfg.runtime.cwd), cfg.results_dir), rows)


if __name__ == "__main__":
    main()
