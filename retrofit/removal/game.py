"""Shapley values and interactions of the closed model's removal game, computed by shapiq.

The game of query row x has the features as players and v(S) = `values(regressor, x, S)`: the
o_closed model's prediction given the table with only S's features (context and query). shapiq
does the game theory (exact computation, KernelSHAP, KernelSHAP-IQ); here only the value
function is supplied. All explained rows share one context, so a coalition is evaluated once for
all rows (`SharedValues`) and every row's game reads it from there.

Baseline: shapiq's own TabPFN imputer cannot fit a table with no features, so it stands in the
mean prediction on held-out rows for v(∅). The closed model can take the empty table: v(∅) is
then the model given the training targets alone. `empty_prediction=None` uses that exact value;
a float uses the given value instead, as shapiq's TabPFNImputer does.
"""

import logging
import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
import shapiq

from retrofit.batching import closed_regressor
from retrofit.errors import RetrofitError
from retrofit.removal.context import MAX_CELLS
from retrofit.removal.features import values

INDICES = {"SV": (shapiq.KernelSHAP, (1,)), "k-SII": (shapiq.KernelSHAPIQ, (1, 2))}
"""Index -> (the shapiq approximator used with a budget, the orders it takes)."""
EXACT_MAX_FEATURES = 16
"""budget=None evaluates all 2^n_features coalitions; refused above this many features."""
SUGGESTED_BUDGET = 512
"""The budget a refusal of exact values suggests (`suggested_budget`: raised to `min_budget` where
that is more)."""

log = logging.getLogger(__name__)


ValueFunction = Callable[[np.ndarray], np.ndarray]
"""(K, n_features) bool coalitions -> (K, n_rows) values of every explained row."""


class SharedValues:
    """v(S) for every explained row, each distinct coalition evaluated once (batched)."""

    def __init__(self, value_function: ValueFunction):
        self.value_function = value_function
        self.known: dict[bytes, np.ndarray] = {}

    def __call__(self, coalitions_KF: np.ndarray) -> np.ndarray:
        """(K, n_rows) values of the (K, n_features) bool coalitions."""
        keys = [row.tobytes() for row in coalitions_KF]
        missing = {key: row for key, row in zip(keys, coalitions_KF, strict=True) if key not in self.known}
        if missing:
            new = self.value_function(np.stack(list(missing.values())))
            self.known.update(zip(missing, new, strict=True))
        return np.stack([self.known[key] for key in keys])


class RemovalGame(shapiq.Game):
    """The removal game of one query row (`row` of the rows `shared` evaluates), for shapiq;
    v(∅) is `empty_value` (centred to 0 by shapiq's normalisation)."""

    def __init__(self, shared: SharedValues, row: int, n_features: int, empty_value: float):
        self.shared, self.row, self.empty_value = shared, row, float(empty_value)
        super().__init__(n_features, normalize=True, normalization_value=self.empty_value)

    def value_function(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = np.asarray(coalitions, dtype=bool)
        empty = ~coalitions.any(axis=1)
        worth = np.full(len(coalitions), self.empty_value)
        if not empty.all():
            worth[~empty] = self.shared(coalitions[~empty])[:, self.row]
        return worth


def shapley(
    regressor: Any,
    X: Any,
    budget: int | None = None,
    index: str = "SV",
    max_order: int = 1,
    *,
    random_state: int = 0,
    empty_prediction: float | None = None,
    max_cells: int = MAX_CELLS,
) -> np.ndarray | list[shapiq.InteractionValues]:
    """Shapley values (index="SV", max_order=1) or k-SII interactions (index="k-SII", max_order 1
    or 2) of every query row of `X` in the removal game of the o_closed `regressor`.

    `budget=None`: exact, over all 2^n_features coalitions (shapiq.ExactComputer; up to
    `EXACT_MAX_FEATURES`). An int: that many coalitions per row, drawn by shapiq's KernelSHAP
    (SV) or KernelSHAP-IQ (k-SII) with `random_state` (the same draw for every row, so each
    coalition is evaluated once for all rows); below `min_budget` the estimate is underdetermined
    and a warning is logged. `empty_prediction`: v(∅) (None: the closed
    model's value of the empty table; see the module docstring).
    Returns for SV an array (n_rows, n_features) with Σ_i φ_i = v(all) − v(∅) per row
    (efficiency); for k-SII one `shapiq.InteractionValues` per row, of the game centred at
    v(∅) = 0 (shapiq's normalisation).
    """
    regressor = closed_regressor(regressor, "retrofit.removal.shapley")
    return explain(
        lambda coalitions: values(regressor, X, coalitions, max_cells=max_cells),
        regressor.n_features_in_,
        budget,
        index,
        max_order,
        random_state=random_state,
        empty_prediction=empty_prediction,
    )


def explain(
    value_function: ValueFunction,
    n_features: int,
    budget: int | None,
    index: str,
    max_order: int,
    *,
    random_state: int = 0,
    empty_prediction: float | None = None,
) -> np.ndarray | list[shapiq.InteractionValues]:
    """`shapley` of any batched value function (K, n_features) -> (K, n_rows); same arguments;
    refusals and warnings before any coalition is evaluated (`_check_arguments`)."""
    _check_arguments(n_features, budget, index, max_order, random_state, empty_prediction)
    approximator = INDICES[index][0]
    shared = SharedValues(value_function)
    if budget is None:  # every row needs every coalition: one batched evaluation up front
        shared(all_coalitions(n_features))
    n_rows = shared(np.ones((1, n_features), dtype=bool)).shape[1]
    if empty_prediction is None:
        empties = shared(np.zeros((1, n_features), dtype=bool))[0]
    else:
        empties = np.full(n_rows, float(empty_prediction))
    results = []
    for row in range(n_rows):
        game = RemovalGame(shared, row, n_features, empties[row])
        if budget is None:
            results.append(shapiq.ExactComputer(game, n_features)(index, max_order))
        else:
            kwargs = {} if index == "SV" else {"max_order": max_order, "index": index}
            results.append(approximator(n_features, random_state=random_state, **kwargs).approximate(budget, game))
    if index == "SV":
        return np.stack([result.get_n_order_values(1) for result in results])
    return results


def min_budget(n_features: int, order: int) -> int:
    """The fewest coalitions per row that determine an estimate of order `order` over `n_features`
    features: its unknowns, sum_{j <= order} C(n, j) (v(∅), the n main effects and, with order 2,
    the C(n, 2) pairs), which shapiq's KernelSHAP and KernelSHAP-IQ fit by weighted least squares to
    the sampled coalitions (the empty and the full one among them). With fewer the fit is
    underdetermined: its values are efficient but unbounded (pairs many times the prediction)."""
    return sum(math.comb(n_features, j) for j in range(order + 1))


def suggested_budget(n_features: int, order: int) -> int:
    """The budget a refusal of exact values suggests: `SUGGESTED_BUDGET`, or `min_budget` where more."""
    return max(SUGGESTED_BUDGET, min_budget(n_features, order))


def _check_arguments(
    n_features: int, budget: int | None, index: str, max_order: int, random_state: Any, empty_prediction: Any
) -> None:
    """RetrofitError for an unknown index, an order it does not take, a bad budget or random_state,
    or an empty_prediction that is not a finite number; a logged warning for a budget below
    `min_budget`."""
    if index not in INDICES:
        raise RetrofitError(f"index must be one of {sorted(INDICES)}, got {index!r}")
    orders = INDICES[index][1]
    if max_order not in orders:
        raise RetrofitError(f"index {index!r} takes max_order in {orders}, got {max_order!r}")
    if budget is None and n_features > EXACT_MAX_FEATURES:
        raise RetrofitError(
            f"exact Shapley values need 2^{n_features} coalitions; above {EXACT_MAX_FEATURES} features pass a budget "
            f"(e.g. budget={suggested_budget(n_features, max_order)})"
        )
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 2):
        raise RetrofitError(f"budget must be None (exact) or an int >= 2 coalitions per row, got {budget!r}")
    needed = min_budget(n_features, max_order)
    if budget is not None and budget < needed:
        log.warning(
            "budget=%d is below the %d coalitions that determine %s of order %d over %d features: "
            "its values are underdetermined; pass budget>=%d",
            budget,
            needed,
            index,
            max_order,
            n_features,
            needed,
        )
    integer = isinstance(random_state, Integral) and not isinstance(random_state, bool)
    if not (random_state is None or (integer and random_state >= 0)):
        raise RetrofitError(f"random_state must be None or an int >= 0 (seeds shapiq's draw), got {random_state!r}")
    number = isinstance(empty_prediction, Real) and not isinstance(empty_prediction, bool)
    if not (empty_prediction is None or (number and math.isfinite(empty_prediction))):
        raise RetrofitError(
            f"empty_prediction must be None (the closed model's own v(∅)) or a finite number, got {empty_prediction!r}"
        )


def all_coalitions(n_features: int) -> np.ndarray:
    """(2^n, n) bool: every coalition of n players."""
    codes = np.arange(2**n_features)[:, None]
    return (codes >> np.arange(n_features)[None, :]) & 1 == 1
