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
    (empty: real size)."""

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
    arch_overrides: dict[str, dict[str, Any]] = MISSING
    seed: int = MISSING
    output: str = MISSING

    @classmethod
    def from_config(cls, node: Any) -> "ScaleConfig":
        """The typed config; RetrofitError naming an unknown key, a wrong type, a missing key or a bad value."""
        from retrofit.batching import check_bounds
        from retrofit.hosts.random_host import DEFAULT_SIZE_HEADS

        cfg = typed_object(cls, node, "scale_check config")
        unknown = [a for a in [*cfg.archs, *cfg.arch_overrides] if a not in DEFAULT_SIZE_HEADS]
        if unknown:
            raise RetrofitError(f"scale_check archs: {unknown} unknown; use some of {list(DEFAULT_SIZE_HEADS)}")
        if min(cfg.rounds, cfg.threads, cfg.n_estimators, cfg.n_null) < 1:
            raise RetrofitError("scale_check: rounds, threads, n_estimators and n_null must be >= 1")
        check_bounds(cfg.max_padding, 1)
        if any(len(t) != 3 or min(t) < 1 for t in cfg.tables):
            raise RetrofitError(f"scale_check tables must be [n_train, n_test, n_features] >= 1, got {cfg.tables}")
        return cfg


def synthetic_table(n_train: int, n_test: int, n_features: int, seed: int):
    """(X_train, y_train, X_test): normal columns, y linear in them plus 10% noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, n_features))
    y = X @ rng.normal(size=n_features) + 0.1 * rng.normal(size=n_train + n_test)
    return X[:n_train], y[:n_train], X[n_train:]


def fitted(path: Path, n_train: int, n_test: int, n_features: int, n_estimators: int, seed: int):
    """(a regressor on `path` fitted on a synthetic table, its test rows)."""
    from retrofit.hosts import make_regressor

    X_train, y_train, X_test = synthetic_table(n_train, n_test, n_features, seed)
    return make_regressor(path, n_estimators=n_estimators, random_state=seed).fit(X_train, y_train), X_test
