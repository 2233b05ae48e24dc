"""Pretrain (or resume) a small TabPFN host (`configs/pretrain_host.yaml`, group `pretrain`).

python experiments/pretrain_host.py pretrain=tiny_v2              # make pretrain-v2
"""

import logging
from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.pretrain.pretrain_config import PretrainConfig


@dataclass
class PretrainHostConfig:
    """The schema of `configs/pretrain_host.yaml`: one `pretrain` run (`PretrainConfig`)."""

    pretrain: PretrainConfig = MISSING


SCHEMA = PretrainHostConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Train the host `job.settings.pretrain` describes (resuming from its run directory), export it."""
    from retrofit.pretrain.trainer import Pretrainer

    pretrain = PretrainConfig.from_config(job.settings.pretrain)
    path = Pretrainer(pretrain).run()
    logging.getLogger(__name__).info("host written to %s", path)


if __name__ == "__main__":
    launch("pretrain_host")
