"""`values`: the closed model's predictions with only a coalition of features present.

v(S)(x) is the prediction for query row x of the model given the table that contains only the
features in S — in every training row of the context and in the query rows. On an o_closed
regressor that is the fitted table with the other features' columns declared absent
(`column_presence`): an absent column is a null token from its first carrier on, so the model
computes what it computes on the table restricted to S's columns, with the same per-member
preprocessing (up to rounding; bitwise with `compact`). See docs/removal.md.
"""

from typing import Any

import numpy as np
import torch

from retrofit.batching import closed_regressor
from retrofit.member_columns import member_feature_columns
from retrofit.removal.context import MAX_CELLS, check_coalitions, evaluate


def values(
    regressor: Any, X: Any, coalitions: Any, *, max_cells: int = MAX_CELLS, share_columns: bool = True
) -> np.ndarray:
    """Predictions (K, n_rows) of the o_closed `regressor` on query rows `X`, row k with only the
    features of `coalitions[k]` present (in the context and in the queries).

    `regressor`: `retrofit.retrofit(fitted, "o_closed")` of a fitted TabPFNRegressor (or a fitted
    `retrofit.RetrofitRegressor("o_closed")`), whose preprocessing is column-separable
    (`retrofit.member_columns`). `X`: (n_rows, n_features) as `predict` takes it.
    `coalitions`: bool (K, n_features), True = present; the empty coalition is allowed (the
    model given the targets alone). All coalitions run over the one fitted context as batch
    elements of batched forwards, no refit, no padding; one forward holds at most `max_cells`
    cells (coalitions x (train + query rows) x member columns) — the memory bound, see
    `retrofit.removal.context.MAX_CELLS`. `share_columns=True` computes the per-column stage
    once per distinct column group for all coalitions of the call (`retrofit.removal.context`);
    False runs the whole forward per coalition (the same values up to rounding).
    Contract: the full coalition equals `regressor.predict(X)` (to 1e-5 of the prediction scale);
    v(S) does not depend on the values of the features outside S (see docs/removal.md for the
    precise scope; bitwise with `compact`).
    RetrofitError for a regressor that is not o_closed, preprocessing that mixes columns, or
    coalitions that are not a bool array of shape (K, n_features).
    """
    regressor = closed_regressor(regressor, "retrofit.removal.values")
    coalitions = check_coalitions(coalitions, regressor.n_features_in_, "feature")
    if getattr(regressor, "is_constant_target_", False):
        return np.tile(np.asarray(regressor.predict(X), dtype=np.float64), (len(coalitions), 1))
    columns = member_feature_columns(regressor)

    def presence(member: int, _input) -> tuple[None, torch.Tensor]:
        return None, torch.as_tensor(coalitions[:, columns[member]])

    return evaluate(regressor, X, len(coalitions), presence, max_cells, share_columns=share_columns)
