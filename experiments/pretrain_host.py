"""Pretrain (or resume) a small TabPFN host: `python experiments/pretrain_host.py pretrain=tiny_v2`."""

import logging

import hydra
from omegaconf import DictConfig, OmegaConf

from retrofit.pretrain.trainer import PretrainConfig, Pretrainer


@hydra.main(version_base="1.3", config_path="../configs", config_name="pretrain_host")
def main(cfg: DictConfig) -> None:
    pretrain = PretrainConfig(**OmegaConf.to_container(cfg.pretrain, resolve=True))
    path = Pretrainer(pretrain).run()
    logging.getLogger(__name__).info("host written to %s", path)


if __name__ == "__main__":
    main()
