"""Run one retrofit case (host × dataset × seed, all selected variants) and aggregate the CSV.

    python experiments/retrofit.py dataset=<name> seed=<n> results_dir=<dir>
    python experiments/retrofit.py -m +experiment=paper_table      # the 18-case grid (make retrofit)

Configs: configs/config.yaml.

`experiments/retrofit.py` is a folder holding this `__main__.py`, which Python runs like a script.
A plain file of that name would be importable as `retrofit` from every script in `experiments/`
(Python puts a script's folder first on sys.path) and shadow the package; a folder named
`retrofit.py` is not importable, so the command line the issue specifies works and nothing is
shadowed. Bad input exits non-zero with `error: <what to fix>`.
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.runner.aggregate import aggregate
from retrofit.runner.case import run_case
from retrofit.runner.cli import exit_on_user_error
from retrofit.runner.config import case_from_hydra


@hydra.main(version_base="1.3", config_path="../../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        case = case_from_hydra(cfg, HydraConfig.get())
        run_case(case)
        aggregate(case.results_dir, table=False)


if __name__ == "__main__":
    main()
