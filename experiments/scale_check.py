"""Every architecture at tabpfn's default size -> results/scale.csv (`make scale-check`)."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register, scale_check

register("scale_check")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="scale_check")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        scale_check.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
