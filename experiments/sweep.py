"""The retrofit sweep's entry point: one case (host × dataset × seed, every selected variant) per job.

    python experiments/sweep.py dataset=<name> seed=<n> results_dir=<dir>
    python experiments/sweep.py -m +experiment=paper_table      # the default grid (make retrofit)

Configs: configs/config.yaml. Bad input exits non-zero with `error: <what to fix>`.
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.runner.aggregate import aggregate
from retrofit.runner.case import run_case
from retrofit.runner.config import case_from_hydra


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        case = case_from_hydra(cfg, HydraConfig.get())
        run_case(case)
        aggregate(case.results_dir, table=False)


if __name__ == "__main__":
    main()
