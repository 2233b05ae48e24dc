"""Pretrain (or resume) a small TabPFN host (`configs/pretrain_host.yaml`, group `pretrain`).

python experiments/pretrain_host.py pretrain=tiny_v2              # make pretrain-v2
"""

import logging
from dataclasses import dataclass

from omegaconf import MISSING, DictConfig

from retrofit.jobs import launch
from retrofit.pretrain.pretrain_config import PretrainConfig
from retrofit.runner.schema import job_config


@dataclass
class PretrainHostConfig:
    """The schema of `configs/pretrain_host.yaml`: one `pretrain` run (`PretrainConfig`)."""

    pretrain: PretrainConfig = MISSING


SCHEMA = PretrainHostConfig


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Train the host `cfg.pretrain` describes (resuming from its run directory) and export it."""
    from retrofit.pretrain.trainer import Pretrainer

    pretrain = PretrainConfig.from_config(job_config(cfg, PretrainHostConfig, "configs/pretrain_host.yaml").pretrain)
    path = Pretrainer(pretrain).run()
    logging.getLogger(__name__).info("host written to %s", path)


if __name__ == "__main__":
    launch("pretrain_host")
