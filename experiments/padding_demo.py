"""The stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import padding_demo, register

register("padding_demo")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="padding_demo")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        padding_demo.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
