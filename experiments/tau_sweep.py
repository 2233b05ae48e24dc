"""ΔRMSE against the tau calibration constant c (make tau-sweep) -> results/tau_sweep.{csv,png}.

python experiments/tau_sweep.py                                  # configs/tau_sweep.yaml
python experiments/tau_sweep.py 'c_values=[0.001,0.01]' 'seeds=[0]' host=tiny_v2
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from tqdm.auto import tqdm

from retrofit.errors import exit_on_user_error
from retrofit.runner.case import run_case
from retrofit.runner.config import resolve
from retrofit.runner.tau_sweep import tau_cases, write_tau_results


@hydra.main(version_base="1.3", config_path="../configs", config_name="tau_sweep")
def main(cfg: DictConfig) -> None:
    base_dir = Path(HydraConfig.get().runtime.cwd)
    with exit_on_user_error():
        for case in tqdm(tau_cases(cfg, HydraConfig.get()), desc="tau sweep", unit="case"):
            run_case(case)
        write_tau_results(resolve(base_dir, cfg.results_dir), resolve(base_dir, cfg.cache_dir))


if __name__ == "__main__":
    main()
