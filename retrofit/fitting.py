"""Fitted cases: a dataset × seed split, and a host regressor fitted on its training rows.

This module is the one way the harness gets a fitted case: the sweep (`retrofit.runner.case`),
the audit, the sink diagnostics, the host quality bar and the measurements all load, split and
fit here, so they see the same rows, the same preprocessing, the same ensemble members and the
same `random_state` for the same settings.

    data = load_split(dataset, seed, base_dir=Path.cwd())              # (Table, Split)
    regressor, seconds = fit_host(host_path, data[1], random_state=seed)
    case = fit_case(CaseSpec(dataset, seed, host_path))                 # both at once

Inference runs in `precision` (a key of `PRECISIONS`) on `device` ("cpu" or "cuda", resolved by
`retrofit.hosts.regressor.resolve_device`). float32 is the default: tabpfn's own default,
`precision="auto"` (`inference_precision="auto"`), runs the forward under torch autocast wherever
tabpfn finds it available (`tabpfn.utils.infer_autocast_inference_mode`): on CUDA always (float16
autocast), on the CPU only on CPUs with native bfloat16 (Intel AMX / AVX512-BF16, AMD Zen 4+;
elsewhere it stays float32), and that rounding (~1e-3 relative) would swamp the deltas being
measured. `auto` is there to measure what a host does as tabpfn runs it by default (the noise
floor's `precision` source).
"""

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabpfn import TabPFNRegressor

from retrofit.data import DatasetSpec, Split, Table, load_table, split
from retrofit.errors import RetrofitError
from retrofit.hosts import make_regressor

PRECISIONS: dict[str, torch.dtype | str] = {"float32": torch.float32, "float64": torch.float64, "auto": "auto"}
"""`precision` name -> the `inference_precision` tabpfn runs in (`auto`: tabpfn's default, its autocast
where available; module docstring)."""


def load_split(dataset: DatasetSpec, seed: int, *, base_dir: Path, test_size: float = 0.3) -> tuple[Table, Split]:
    """The cleaned table of `dataset` (files relative to `base_dir`) and its split by `seed`
    (`retrofit.data.split`, at most `dataset.max_rows` rows); DatasetError if either is unusable."""
    table = load_table(dataset, base_dir)
    return table, split(table, seed, test_size, dataset.max_rows)


def fit_host(
    host_path: Path,
    data: Split,
    *,
    random_state: int,
    n_estimators: int = 8,
    device: str = "cpu",
    precision: str = "float32",
    **overrides: Any,
) -> tuple[TabPFNRegressor, float]:
    """A `TabPFNRegressor` on the checkpoint at `host_path` (`retrofit.hosts.make_regressor`), told
    the split's categorical columns and fitted on its training rows; and the fit time in seconds.

    `overrides` go to `make_regressor` (e.g. `inference_config=` for a named preset).
    RetrofitError for an unknown `precision`.
    """
    if precision not in PRECISIONS:
        raise RetrofitError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    regressor = make_regressor(
        host_path,
        n_estimators=n_estimators,
        random_state=random_state,
        device=device,
        inference_precision=PRECISIONS[precision],
        **overrides,
    )
    regressor.set_params(categorical_features_indices=list(data.categorical_indices) or None)
    start = time.perf_counter()
    regressor.fit(data.X_train, data.y_train)
    return regressor, time.perf_counter() - start


@dataclass(frozen=True)
class CaseSpec:
    """What one fitted case is: `dataset` split by `seed` (`test_size`; files relative to
    `base_dir`) and the host at `host_path` fitted on its training rows with `n_estimators`
    members and `random_state = seed`, predicting on `device` in `precision` (a key of `PRECISIONS`)."""

    dataset: DatasetSpec
    seed: int
    host_path: Path
    base_dir: Path = field(default_factory=Path.cwd)
    n_estimators: int = 8
    test_size: float = 0.3
    device: str = "cpu"
    precision: str = "float32"


@dataclass(frozen=True)
class FittedCase:
    """A fitted case: its spec, the cleaned table, the split and the fitted regressor."""

    spec: CaseSpec
    table: Table
    data: Split
    regressor: TabPFNRegressor
    fit_seconds: float

    @property
    def name(self) -> str:
        """The dataset's name."""
        return self.spec.dataset.name

    @property
    def seed(self) -> int:
        return self.spec.seed

    @property
    def X_test(self) -> np.ndarray:
        return self.data.X_test

    @property
    def y_test(self) -> np.ndarray:
        return self.data.y_test


def case_data(spec: CaseSpec) -> tuple[Table, Split]:
    """The cleaned table and the seeded split of `spec` (`load_split`)."""
    return load_split(spec.dataset, spec.seed, base_dir=spec.base_dir, test_size=spec.test_size)


def fit_case(spec: CaseSpec, **overrides: Any) -> FittedCase:
    """`spec` loaded, split and fitted (`load_split`, `fit_split`; `overrides` go to `make_regressor`)."""
    table, data = case_data(spec)
    return FittedCase(spec, table, data, *fit_split(spec, data, **overrides))


def fit_split(spec: CaseSpec, data: Split, **overrides: Any) -> tuple[TabPFNRegressor, float]:
    """`spec`'s host fitted on `data`, the split of `spec` already loaded (`fit_host` with the
    spec's members, `random_state`, device and precision), and the fit time in seconds."""
    return fit_host(
        spec.host_path,
        data,
        random_state=spec.seed,
        n_estimators=spec.n_estimators,
        device=spec.device,
        precision=spec.precision,
        **overrides,
    )


def fit_cases(
    host_path: Path, datasets: Iterable[DatasetSpec], seeds: Iterable[int], **settings: Any
) -> list[FittedCase]:
    """`fit_case` of every dataset × seed (datasets outer) on `host_path`; `settings` are the other
    `CaseSpec` fields (`base_dir`, `n_estimators`, ...)."""
    seeds = list(seeds)
    return [fit_case(CaseSpec(dataset, seed, Path(host_path), **settings)) for dataset in datasets for seed in seeds]
