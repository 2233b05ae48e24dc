"""The scale check's settings (the schema of `configs/scale_check.yaml`, which holds every value)
and the synthetic tables they describe. Importing it imports no model (torch, tabpfn): those come
with the functions that check the settings or fit a regressor."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import MISSING

from retrofit.errors import RetrofitError
from retrofit.typed import typed_object


@dataclass
class ScaleConfig:
    """The schema of `configs/scale_check.yaml` (each key's role is written there). Tables are
    synthetic (`synthetic_table`); `tables`: the predict_many tables, each `[n_train, n_test,
    n_features]`; `arch_overrides`: architecture -> config keys that replace tabpfn's defaults
    (empty: real size). `device` is resolved by `from_config` to "cpu" or "cuda"; the timed and
    memory-probed tables are `sizes`."""

    archs: list[str] = MISSING
    variants: list[str] = MISSING
    n_train: int = MISSING
    n_test: int = MISSING
    n_features: int = MISSING
    n_estimators: int = MISSING
    threads: int = MISSING
    rounds: int = MISSING
    audit_n_train: int = MISSING
    audit_n_test: int = MISSING
    n_null: int = MISSING
    tables: list[list[int]] = MISSING
    max_padding: float = MISSING
    device: str = MISSING
    cuda_sizes: list[list[int]] = MISSING
    memory_saving_table: list[int] = MISSING
    memory_saving_chunk_cells: int = MISSING
    arch_overrides: dict[str, dict[str, Any]] = MISSING
    seed: int = MISSING
    output: str = MISSING

    @classmethod
    def from_config(cls, node: Any) -> "ScaleConfig":
        """The typed config; RetrofitError naming an unknown key, a wrong type, a missing key or a bad value."""
        from retrofit.batching import check_bounds
        from retrofit.hosts.random_host import DEFAULT_SIZE_HEADS
        from retrofit.hosts.regressor import resolve_device

        cfg = typed_object(cls, node, "scale_check config")
        cfg.device = resolve_device(cfg.device)
        unknown = [a for a in [*cfg.archs, *cfg.arch_overrides] if a not in DEFAULT_SIZE_HEADS]
        if unknown:
            raise RetrofitError(f"scale_check archs: {unknown} unknown; use some of {list(DEFAULT_SIZE_HEADS)}")
        if min(cfg.rounds, cfg.threads, cfg.n_estimators, cfg.n_null, cfg.memory_saving_chunk_cells) < 1:
            raise RetrofitError(
                "scale_check: rounds, threads, n_estimators, n_null and memory_saving_chunk_cells must be >= 1"
            )
        check_bounds(cfg.max_padding, 1)
        tables = {"tables": cfg.tables, "cuda_sizes": cfg.cuda_sizes, "memory_saving_table": [cfg.memory_saving_table]}
        for key, value in tables.items():
            if any(len(t) != 3 or min(t) < 1 for t in value):
                raise RetrofitError(
                    f"scale_check {key}: each table must be [n_train, n_test, n_features] >= 1, got {value}"
                )
        return cfg

    @property
    def sizes(self) -> list[tuple[int, int, int]]:
        """The timed and memory-probed tables (n_train, n_test, n_features): the one of `n_train`,
        `n_test`, `n_features` on the CPU, `cuda_sizes` on CUDA (whose first is where the
        operations are counted)."""
        if self.device == "cuda":
            return [(n_train, n_test, n_features) for n_train, n_test, n_features in self.cuda_sizes]
        return [(self.n_train, self.n_test, self.n_features)]


def synthetic_table(n_train: int, n_test: int, n_features: int, seed: int):
    """(X_train, y_train, X_test): normal columns, y linear in them plus 10% noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, n_features))
    y = X @ rng.normal(size=n_features) + 0.1 * rng.normal(size=n_train + n_test)
    return X[:n_train], y[:n_train], X[n_train:]


def fitted(path: Path, n_train: int, n_test: int, n_features: int, n_estimators: int, seed: int, **overrides: Any):
    """(a regressor on `path` fitted on a synthetic table, its test rows); `overrides` go to
    `retrofit.hosts.make_regressor` (e.g. `device`, `memory_saving_mode`)."""
    from retrofit.hosts import make_regressor

    X_train, y_train, X_test = synthetic_table(n_train, n_test, n_features, seed)
    regressor = make_regressor(path, n_estimators=n_estimators, random_state=seed, **overrides)
    return regressor.fit(X_train, y_train), X_test
