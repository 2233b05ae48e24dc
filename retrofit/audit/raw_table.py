"""Absent rows or columns inserted into the raw table, before tabpfn's per-member preprocessing.

`raw_table_change` refits the regressor (same parameters) on the training table with `k` inserted
rows (`kind="rows"`: noise features, targets drawn from the training targets) or `k` inserted
feature columns (`kind="columns"`: noise in the training and test rows) at positions drawn with
`seed`, and compares the variant's predictions with the variant on the regressor refitted on the
table as it is. A closed variant is told they are absent at the model input of every ensemble
member: the inserted training rows (`row_presence`; members keep the fitted table's row order) or
the member columns derived from the inserted features (`column_presence`,
`retrofit.member_columns`); any other model sees them as data. So the change is what the
per-member preprocessing, fitted on every row and column it is given before the model, lets
through to a model that is closed from its input on (`NullInput` inserts after the preprocessing).
"""

import numpy as np
import torch
from sklearn.base import clone
from tabpfn import TabPFNRegressor

from retrofit.batching import decode_members, member_inputs
from retrofit.member_columns import member_feature_columns
from retrofit.ops.insertion import random_keep_mask
from retrofit.patching import retrofit
from retrofit.variants import resolve_variant

SHUFFLING_LEAK = "preprocessing: feature shuffling (FEATURE_SHIFT_METHOD={method!r})"
"""Each member's column order is drawn for the number of features, so an inserted feature reorders
the others (grouping and positions follow the order); fit with
inference_config={'FEATURE_SHIFT_METHOD': None}."""

ROWS_LEAK = "preprocessing: fitted on every training row"
"""The per-member preprocessing (per-feature transforms, categorical encodings, constant-column
removal) and the target's z-scaling are fitted on every training row, before the model."""


def raw_table_predictions(
    regressor: TabPFNRegressor,
    train: tuple[np.ndarray, np.ndarray],
    X_test: np.ndarray,
    setting: dict,
    kind: str,
    k: int,
    seed: int,
) -> np.ndarray:
    """`setting`'s predictions (`{"variant": name or spec, **hparams}`, as `retrofit` takes) on
    `X_test` of `regressor` refitted on its training table `train` = (X_train, y_train) with `k`
    absent rows or columns (`kind`) inserted (see the module docstring). RetrofitError where a
    closed variant cannot be told which member columns are absent (the preprocessing mixes
    columns: `retrofit.member_columns.MIXING_STEPS`)."""
    setting = dict(setting)
    variant = setting.pop("variant")
    X_train, y_train = train
    generator = torch.Generator().manual_seed(seed)
    if kind == "rows":
        keep = random_keep_mask(len(X_train), k, generator).numpy()
        X_new, y_new, X_query = _spread(X_train, keep, generator, 0), _spread_targets(y_train, keep, generator), X_test
    else:
        keep = random_keep_mask(X_train.shape[1], k, generator).numpy()
        X_new, y_new = _spread(X_train, keep, generator, 1), y_train
        X_query = _spread(X_test, keep, generator, 1)
    patched = retrofit(_refit(regressor, X_new, y_new, keep if kind == "columns" else None), variant, **setting)
    if not resolve_variant(variant, **setting).closed:
        return patched.predict(X_query)
    return _predict_absent(patched, X_query, keep, kind)


def preprocessing_leak(regressor: TabPFNRegressor, kind: str) -> str:
    """What in `regressor`'s per-member preprocessing sees an inserted raw row or column (`kind`)
    although a closed model is told it is absent (`ROWS_LEAK`, `SHUFFLING_LEAK`), "" when nothing
    does (columns, column-separable preprocessing without shuffling)."""
    if kind == "rows":
        return ROWS_LEAK
    method = regressor.get_inference_config().FEATURE_SHIFT_METHOD
    return SHUFFLING_LEAK.format(method=method) if method is not None else ""


def _predict_absent(patched: TabPFNRegressor, X_query: np.ndarray, keep: np.ndarray, kind: str) -> np.ndarray:
    """The o_closed `patched` regressor's mean predictions with the inserted training rows or raw
    features (False in `keep`) declared absent at every member's model input."""
    columns = member_feature_columns(patched) if kind == "columns" else None
    logits = []
    for member in member_inputs(0, patched, X_query):
        if kind == "rows":
            test_T = np.ones(member.shape[1], dtype=bool)
            presence = {"row_presence": torch.as_tensor(np.concatenate([keep, test_T]))[None]}
        else:
            presence = {"column_presence": torch.as_tensor(keep[columns[member.member]])[None]}
        presence = {name: p.to(member.x_RC.dtype) for name, p in presence.items()}
        with torch.inference_mode():
            logits.append(patched.models_[0](member.x_RC[:, None], member.y_N[:, None], **presence)[:, 0])
    return decode_members(patched, logits)


def _refit(
    regressor: TabPFNRegressor, X: np.ndarray, y: np.ndarray, keep_columns: np.ndarray | None = None
) -> TabPFNRegressor:
    """An unfitted copy of `regressor` (same parameters) fitted on (X, y); the categorical feature
    indices follow the columns of `keep_columns` (True at the original features) when given."""
    fresh = clone(regressor)
    categorical = fresh.get_params()["categorical_features_indices"]
    if keep_columns is not None and categorical:
        fresh.set_params(categorical_features_indices=[int(np.flatnonzero(keep_columns)[c]) for c in categorical])
    return fresh.fit(X, y)


def _spread(x: np.ndarray, keep: np.ndarray, generator: torch.Generator, axis: int) -> np.ndarray:
    """`x` with its `axis` spread over the True entries of `keep`; the inserted entries hold
    standard-normal noise drawn from `generator` (absent cells may hold anything)."""
    shape = list(x.shape)
    shape[axis] = len(keep)
    out = torch.randn(shape, generator=generator, dtype=torch.float64).numpy()
    index = [slice(None)] * x.ndim
    index[axis] = keep
    out[tuple(index)] = x
    return out


def _spread_targets(y: np.ndarray, keep: np.ndarray, generator: torch.Generator) -> np.ndarray:
    """`y` spread over the True entries of `keep`; the inserted targets are drawn from `y`'s values."""
    out = np.empty(len(keep), dtype=np.float64)
    out[keep] = y
    drawn = torch.randint(len(y), ((~keep).sum(),), generator=generator).numpy()
    out[~keep] = y[drawn]
    return out
