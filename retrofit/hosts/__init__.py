"""Hosts: the shipped pretrained TabPFN regressors, user checkpoints, and writing checkpoints.

The names below are resolved on first access, so `from retrofit.hosts import get_path` (which
files exist) does not pay for importing torch, tabpfn or the adapters that checkpoint validation
and regressors need.
"""

from retrofit.lazy import lazy_attributes

_LAZY = {
    "SHIPPED_HOSTS": "retrofit.hosts.shipped",
    "available": "retrofit.hosts.shipped",
    "get_path": "retrofit.hosts.shipped",
    "check_checkpoint": "retrofit.hosts.validation",
    "host_file": "retrofit.hosts.validation",
    "make_regressor": "retrofit.hosts.regressor",
    "build_host": "retrofit.hosts.checkpoint",
    "inference_config": "retrofit.hosts.checkpoint",
    "save_host": "retrofit.hosts.checkpoint",
    "set_borders": "retrofit.hosts.checkpoint",
}
"""Public name -> the module defining it, imported on first access."""

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY)
