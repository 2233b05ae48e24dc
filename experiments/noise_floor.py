"""Each host's noise floor (its stock RMSE under changes that should not matter) -> results/noise_floor.csv."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import noise_floor, register

register("noise_floor")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="noise_floor")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        noise_floor.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
