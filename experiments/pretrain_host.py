"""Pretrain (or resume) a small TabPFN host: `python experiments/pretrain_host.py pretrain=tiny_v2`."""

import logging

import hydra
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.pretrain.config import PretrainConfig
from retrofit.pretrain.trainer import Pretrainer


@hydra.main(version_base="1.3", config_path="../configs", config_name="pretrain_host")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        pretrain = PretrainConfig.from_config(cfg.pretrain)
    path = Pretrainer(pretrain).run()
    logging.getLogger(__name__).info("host written to %s", path)


if __name__ == "__main__":
    main()
