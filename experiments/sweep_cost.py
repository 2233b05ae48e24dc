"""Where the sweep's time goes: CPU seconds per phase of the paper table's cases -> results/sweep_cost.csv.

python experiments/sweep_cost.py                      # configs/sweep_cost.yaml (make sweep-cost)
python experiments/sweep_cost.py 'datasets=[wage]' 'seeds=[1]' repeats=1 output=outputs/cost.csv
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register, sweep_cost

register("sweep_cost", "config")  # this entry point's schema, and the sweep's, whose cases it composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="sweep_cost")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        sweep_cost.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
