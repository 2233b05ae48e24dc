"""ΔRMSE against the tau calibration constant c (make tau-sweep) -> results/tau_sweep.{csv,png}.

python experiments/tau_sweep.py                                  # configs/tau_sweep.yaml
python experiments/tau_sweep.py 'c_values=[0.001,0.01]' 'seeds=[0]' host=tiny_v2
python experiments/tau_sweep.py plot_only=true                   # redraw the plot from tau_sweep.csv

A progress bar per case over its units; per-unit detail in the run's log file.
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register, tau_sweep

register("tau_sweep")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="tau_sweep")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        tau_sweep.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
