"""Hosts: the shipped pretrained TabPFN regressors, user checkpoints, and writing checkpoints."""

from retrofit.hosts.checkpoint import build_host, inference_config, save_host, set_borders
from retrofit.hosts.regressor import make_regressor
from retrofit.hosts.shipped import SHIPPED_HOSTS, available, check_checkpoint, get_path

__all__ = [
    "SHIPPED_HOSTS",
    "available",
    "build_host",
    "check_checkpoint",
    "get_path",
    "inference_config",
    "make_regressor",
    "save_host",
    "set_borders",
]
