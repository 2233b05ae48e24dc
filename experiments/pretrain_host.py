"""Pretrain (or resume) a small TabPFN host: `python experiments/pretrain_host.py pretrain=tiny_v2`."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import pretrain_host, register

register("pretrain_host")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="pretrain_host")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        pretrain_host.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
