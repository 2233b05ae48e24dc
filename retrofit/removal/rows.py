"""Row removal (data valuation): the closed model's predictions with only some training rows in
its context, and leave-one-out values of every training row, in batched forwards.

A training row is removed by declaring it absent in the context (`row_presence` of
`OClosedTabPFNV3.forward`): from its first carrier on it is a null token, so every statistic of
the model's input stage, every attention and the predictions are what the model computes on
the context without it (up to rounding; bitwise with `compact`), and an absent row's cells and
target change nothing. What is NOT removed: tabpfn's own preprocessing, fitted on all training
rows before the model — the per-feature transforms (squashing scaler, quantiles), categorical
encodings, the inferred column types, constant-column removal and the target's z-scaling
(mean, std) and bar borders. A refit without the row refits those too; see docs/removal.md.
"""

from typing import Any

import numpy as np
import torch

from retrofit.batching import closed_regressor
from retrofit.errors import RetrofitError
from retrofit.removal.context import MAX_CELLS, check_coalitions, evaluate


def row_values(regressor: Any, X: Any, rows: Any, *, max_cells: int = MAX_CELLS) -> np.ndarray:
    """Predictions (K, n_rows) of the o_closed `regressor` on query rows `X`, coalition k with only
    the training rows where `rows[k]` is True in the context.

    `rows`: bool (K, n_train), in the order of the training table passed to `fit`; a coalition
    needs at least one present row. Batched and memory-bounded as `retrofit.removal.values`.
    RetrofitError for a regressor that is not o_closed, a fit that subsamples rows per member
    (SUBSAMPLE_SAMPLES), or `rows` that are not such a bool array.
    """
    regressor = closed_regressor(regressor, "retrofit.removal.row_values")
    n_train = _n_train(regressor)
    rows = check_coalitions(rows, n_train, "training row")
    if not rows.any(axis=1).all():
        raise RetrofitError("every row coalition needs at least one present training row (the model needs a context)")
    if getattr(regressor, "is_constant_target_", False):
        return np.tile(np.asarray(regressor.predict(X), dtype=np.float64), (len(rows), 1))

    def presence(_member: int, _input) -> tuple[torch.Tensor, None]:
        return torch.as_tensor(rows), None

    return evaluate(regressor, X, len(rows), presence, max_cells)


def leave_one_out(regressor: Any, X: Any, y: Any, *, max_cells: int = MAX_CELLS) -> np.ndarray:
    """(n_train,) leave-one-out value of every training row for the query set (X, y): the mean
    squared error on it without the row minus with all rows (positive: the row helps).

    One coalition per training row plus the full context, in batched forwards (`row_values`).
    RetrofitError for a y that is not one finite number per query row (a NaN target would make
    every value NaN).
    """
    try:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise RetrofitError("y of leave_one_out must be numbers, one target per query row") from None
    regressor = closed_regressor(regressor, "retrofit.removal.leave_one_out")
    n_train = _n_train(regressor)
    if len(y) != len(X):
        raise RetrofitError(f"y has {len(y)} values for {len(X)} query rows; pass one target per query row")
    unknown = np.flatnonzero(~np.isfinite(y))
    if unknown.size:
        raise RetrofitError(
            f"y of query row {unknown[0]} is {y[unknown[0]]} ({unknown.size} of {len(y)} rows are not finite); "
            "every query row needs a known target: drop the rows without one"
        )
    coalitions = np.ones((n_train + 1, n_train), dtype=bool)
    coalitions[np.arange(n_train), np.arange(n_train)] = False
    predictions = row_values(regressor, X, coalitions, max_cells=max_cells)
    losses = ((predictions - y[None, :]) ** 2).mean(axis=1)
    return losses[:n_train] - losses[n_train]


def _n_train(regressor: Any) -> int:
    """Training rows in every member's context (all, in the order of the fitted table);
    RetrofitError where members see row subsets."""
    if regressor.get_inference_config().SUBSAMPLE_SAMPLES is not None:
        raise RetrofitError(
            "row removal needs every ensemble member to hold all training rows in order, but the regressor was fitted "
            "with SUBSAMPLE_SAMPLES set; fit with inference_config={'SUBSAMPLE_SAMPLES': None}"
        )
    return int(regressor.n_train_samples_)
