"""Two-block hosts under null insertion -> results/ablation.{csv,md} (`make ablation`)."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import ablation, register

register("ablation")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="ablation")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        ablation.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
