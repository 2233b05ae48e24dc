"""A `TabPFNRegressor` on a host checkpoint, configured the one way the harness uses it."""

import dataclasses
import difflib
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from tabpfn.inference_config import InferenceConfig

from retrofit.errors import RetrofitError, listing
from retrofit.hosts import column_embeddings  # noqa: F401  (tabpfn's loader pins stored column embeddings)
from retrofit.hosts.links import tabpfn_path
from retrofit.hosts.validation import check_checkpoint

INFERENCE_PRECISION = torch.float32
"""The one precision the harness predicts in (see `make_regressor`)."""

MAX_MEMBERS = 10_000
"""The most ensemble members a regressor may have (`make_regressor`, and so the sweep's cases, the
estimator and `retrofit.compare`): beyond, the members' arrays alone outgrow any machine's memory."""
DEVICES = ("auto", "cpu", "cuda")
"""What `make_regressor(device=...)` accepts; "auto" is "cuda" where CUDA is available, else "cpu"."""


def resolve_device(device: Literal["auto", "cpu", "cuda"]) -> str:
    """The torch device for `device`: "cpu" or "cuda"; RetrofitError for another value or "cuda" without CUDA.

    On CUDA, TF32 matrix products are turned off (torch.backends.cuda.matmul and cudnn; a
    process-wide torch setting): TF32 keeps 10 mantissa bits, whose ~1e-3 rounding would swamp
    the retrofit deltas just as bfloat16 would (see `make_regressor`).
    """
    if device not in DEVICES:
        raise RetrofitError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RetrofitError(
                f"device='cuda' but torch {torch.__version__} sees no CUDA device; use device='cpu' (or 'auto'), "
                "or install a CUDA build of torch on a machine with a GPU"
            )
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return device


def make_regressor(
    path: str | Path,
    *,
    n_estimators: int = 8,
    random_state: int | None = 0,
    device: Literal["auto", "cpu", "cuda"] = "cpu",
    **overrides,
) -> TabPFNRegressor:
    """An unfitted regressor on the checkpoint `path`, on `device` (see `resolve_device`), in float32, offline.

    `path`: whatever `check_checkpoint` takes (a file, a symlink, a HuggingFace cache folder, a tabpfn
    model name); tabpfn gets it under the name given (`retrofit.hosts.links.tabpfn_path`).

    `inference_precision=INFERENCE_PRECISION` (float32) is explicit: tabpfn's "auto" turns on bfloat16 autocast
    on CPUs with native bf16, whose ~1e-3 rounding would swamp the retrofit deltas and make
    every number depend on the machine.

    `ignore_pretraining_limits=True` is set deliberately: tabpfn refuses more than 1,000 rows on
    CPU otherwise, and the default datasets (Wage, College) exceed that. The checkpoint is
    validated first, so a bad path fails at once instead of attempting a hub download.

    RetrofitError, before anything is built: `n_estimators` not an integer in [1, `MAX_MEMBERS`]
    (tabpfn would fit with 0 and fail at predict, and run unbounded past the bound); `random_state`
    not None, an integer >= 0, a numpy RandomState or Generator; `model_path` among `overrides`
    (it would replace the checked `path` unchecked); an `inference_config` mapping with a key
    tabpfn's InferenceConfig lacks (`check_inference_config`);
    a device `resolve_device` refuses; a checkpoint `check_checkpoint` refuses.
    """
    if not isinstance(n_estimators, Integral) or isinstance(n_estimators, bool) or not 1 <= n_estimators <= MAX_MEMBERS:
        raise RetrofitError(
            f"n_estimators must be an integer in [1, {MAX_MEMBERS}] (ensemble members), got {n_estimators!r}"
        )
    seeded = isinstance(random_state, Integral) and not isinstance(random_state, bool) and random_state >= 0
    if not (random_state is None or seeded or isinstance(random_state, np.random.RandomState | np.random.Generator)):
        raise RetrofitError(
            f"random_state must be None, an integer >= 0, a numpy RandomState or Generator, got {random_state!r}"
        )
    if "model_path" in overrides:
        raise RetrofitError(
            "make_regressor takes the checkpoint as its first argument `path` (validated by check_checkpoint); "
            f"drop model_path={overrides['model_path']!r} and pass it as `path`"
        )
    check_inference_config(overrides.get("inference_config"))
    settings = dict(
        model_path=str(tabpfn_path(check_checkpoint(path))),
        n_estimators=n_estimators,
        random_state=random_state,
        device=resolve_device(device),
        inference_precision=INFERENCE_PRECISION,
        ignore_pretraining_limits=True,
    )
    settings.update(overrides)
    return TabPFNRegressor(**settings)


def check_inference_config(config: object) -> None:
    """RetrofitError naming the closest key for a key of the mapping `config` that tabpfn's
    InferenceConfig does not have: tabpfn refuses it only at fit, in pydantic's several lines."""
    if not isinstance(config, Mapping):
        return  # None, or an InferenceConfig tabpfn checks itself
    keys = [field.name for field in dataclasses.fields(InferenceConfig)]
    unknown = [key for key in config if key not in keys]
    if unknown:
        public = [key for key in keys if not key.startswith("_")]
        close = difflib.get_close_matches(str(unknown[0]), public, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise RetrofitError(
            f"inference_config has no key {unknown[0]!r}{hint}; tabpfn's InferenceConfig takes {listing(public)}"
        )
