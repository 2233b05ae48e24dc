"""Run one retrofit case (host × dataset × seed, all selected variants) and aggregate the CSV.

    python experiments/retrofit.py dataset=<name> seed=<n> results_dir=<dir>
    python experiments/retrofit.py -m +experiment=paper_table      # the 18-case grid (make retrofit)

Configs: configs/config.yaml. Bad input exits non-zero with `error: <what to fix>`.
"""

import sys
from pathlib import Path

# This script is named like the package it drives, and Python puts a script's own folder first on
# sys.path, where `import retrofit` would find this file instead of the installed package. Take
# that one entry out before importing anything of ours (the package itself is installed with pip).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from retrofit.runner.aggregate import aggregate  # noqa: E402
from retrofit.runner.case import run_case  # noqa: E402
from retrofit.runner.cli import exit_on_user_error  # noqa: E402
from retrofit.runner.config import case_from_hydra  # noqa: E402


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        case = case_from_hydra(cfg, HydraConfig.get())
        run_case(case)
        aggregate(case.results_dir, table=False)


if __name__ == "__main__":
    main()
