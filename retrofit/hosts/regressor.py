"""A `TabPFNRegressor` on a host checkpoint, configured the one way the harness uses it."""

from pathlib import Path

import torch
from tabpfn import TabPFNRegressor

from retrofit.hosts.registry import check_checkpoint

INFERENCE_PRECISION = torch.float32
"""The one precision the harness predicts in (see `make_regressor`)."""


def make_regressor(path: str | Path, *, n_estimators: int = 8, random_state: int = 0, **overrides) -> TabPFNRegressor:
    """An unfitted regressor on the checkpoint at `path`, on the CPU, in float32, offline.

    `inference_precision=INFERENCE_PRECISION` (float32) is explicit: tabpfn's "auto" turns on bfloat16 autocast
    on CPUs with native bf16, whose ~1e-3 rounding would swamp the retrofit deltas and make
    every number depend on the machine.

    `ignore_pretraining_limits=True` is set deliberately: tabpfn refuses more than 1,000 rows on
    CPU otherwise, and the default datasets (Wage, College) exceed that. The checkpoint is
    validated first, so a bad path fails at once instead of attempting a hub download.
    """
    settings = dict(
        model_path=str(check_checkpoint(path)),
        n_estimators=n_estimators,
        random_state=random_state,
        device="cpu",
        inference_precision=INFERENCE_PRECISION,
        ignore_pretraining_limits=True,
    )
    settings.update(overrides)
    return TabPFNRegressor(**settings)
