"""Absent rows or columns inserted into the raw table, before tabpfn's per-member preprocessing.

`raw_table_predictions` inserts `k` rows (`kind="rows"`: noise features, targets drawn from the
training targets) or `k` feature columns (`kind="columns"`: noise in the training and test rows)
into the training table at positions drawn with `seed`, and predicts with the variant:
- a closed variant is told they are absent in the raw table. They are removed before tabpfn's
  preprocessing is fitted, so what it fits across rows or columns (per-feature quantiles and
  scalers, SVD components, the fingerprint and its rows x columns salt, imputation, the feature
  subsampling and shuffling draws, the target's scaling) sees the present rows and columns only,
  whatever the preset; then they are padded back into every member's model input and declared
  absent (`row_presence`, `column_presence`): the inserted training rows at their raw positions,
  the inserted columns at member-column positions drawn with `seed`, their cells noise. The
  change is what the model-level closure lets through from the padded positions.
- any other variant cannot be told: the regressor is refitted on the table with them,
  preprocessing included, and predicts the query rows (inserted columns included).
The reference is the variant on the regressor fitted on the table as it is.
"""

import numpy as np
import torch
from sklearn.base import clone
from tabpfn import TabPFNRegressor
from tabpfn.utils import get_autocast_context

from retrofit.batching import decode_members, member_inputs
from retrofit.ops.insertion import random_keep_mask
from retrofit.patching import retrofit
from retrofit.variants import resolve_variant


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
    `X_test` with `k` absent rows or columns (`kind`) inserted into `regressor`'s training table
    `train` = (X_train, y_train); `regressor` gives the parameters of every refit (see the module
    docstring; its `random_state` an integer, so that a refit on the same table is the same fit)."""
    setting = dict(setting)
    variant = setting.pop("variant")
    X_train, y_train = train
    generator = torch.Generator().manual_seed(seed)
    if kind == "rows":
        keep = random_keep_mask(len(X_train), k, generator)
        X_new, y_new, X_query = _spread(X_train, keep, generator, 0), _spread_targets(y_train, keep, generator), X_test
    else:
        keep = random_keep_mask(X_train.shape[1], k, generator)
        X_new, y_new, X_query = _spread(X_train, keep, generator, 1), y_train, _spread(X_test, keep, generator, 1)
    if not resolve_variant(variant, **setting).closed:
        fitted = _refit(regressor, X_new, y_new, keep.numpy() if kind == "columns" else None)
        return retrofit(fitted, variant, **setting).predict(X_query)
    present = keep.numpy()
    if kind == "rows":
        fitted = _refit(regressor, X_new[present], y_new[present])
    else:
        fitted, X_query = _refit(regressor, X_new[:, present], y_new), X_query[:, present]
    return _predict_padded(retrofit(fitted, variant, **setting), X_query, keep, kind, generator)


def _predict_padded(
    patched: TabPFNRegressor, X_query: np.ndarray, keep: torch.Tensor, kind: str, generator: torch.Generator
) -> np.ndarray:
    """The closed `patched` regressor's mean predictions on `X_query` with the absent training rows
    (False in `keep`, at their raw positions) or `(~keep).sum()` absent columns (at positions drawn
    from `generator`) padded into every member's model input, noise in their cells, declared absent."""
    logits = []
    for member in member_inputs(0, patched, X_query):
        _, T, C = member.shape
        if kind == "rows":
            keep_R = torch.cat([keep, keep.new_ones(T)])
            x_RC, y_N = _spread(member.x_RC, keep_R, generator, 0), _spread(member.y_N, keep, generator, 0)
            presence = {"row_presence": keep_R}
        else:
            keep_C = random_keep_mask(C, int((~keep).sum()), generator)
            x_RC, y_N = _spread(member.x_RC, keep_C, generator, 1), member.y_N
            presence = {"column_presence": keep_C}
        presence = {name: p.to(x_RC.dtype)[None] for name, p in presence.items()}
        with get_autocast_context(patched.devices_[0], enabled=patched.use_autocast_), torch.inference_mode():
            logits.append(patched.models_[0](x_RC[:, None], y_N[:, None], **presence)[:, 0].float())
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


def _spread(x, keep: torch.Tensor, generator: torch.Generator, axis: int):
    """`x` (a numpy array or a tensor, returned as the same) with its `axis` spread over the True
    entries of `keep`; the inserted entries hold standard-normal noise drawn from `generator`
    (absent cells may hold anything)."""
    x_t = torch.from_numpy(np.array(x)) if isinstance(x, np.ndarray) else x  # a copy: x may be read-only
    shape = list(x_t.shape)
    shape[axis] = len(keep)
    out = torch.randn(shape, generator=generator, dtype=torch.float64).to(x_t.device, x_t.dtype)
    out = out.index_copy(axis, keep.nonzero()[:, 0].to(x_t.device), x_t)
    return out.numpy() if isinstance(x, np.ndarray) else out


def _spread_targets(y: np.ndarray, keep: torch.Tensor, generator: torch.Generator) -> np.ndarray:
    """`y` spread over the True entries of `keep`; the inserted targets are drawn from `y`'s values."""
    keep = keep.numpy()
    out = np.empty(len(keep), dtype=np.float64)
    out[keep] = y
    drawn = torch.randint(len(y), ((~keep).sum(),), generator=generator).numpy()
    out[~keep] = y[drawn]
    return out
