"""What an explanation computes, known and checked before any fit: the rows, the shapiq index of
the order, the coalitions per row (`Plan`), and each refusal of a request that cannot be met."""

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from retrofit.errors import RetrofitError
from retrofit.removal.game import EXACT_MAX_FEATURES, min_budget, suggested_budget

ORDERS = {1: "SV", 2: "k-SII"}
"""`order` -> the shapiq index computed: Shapley values, or pairwise Shapley interactions (k-SII)."""
APPROXIMATORS = {"SV": "KernelSHAP", "k-SII": "KernelSHAP-IQ"}
"""The shapiq approximator that a `budget` runs, per index (`retrofit.removal.game.INDICES`)."""


@dataclass(frozen=True)
class Plan:
    """What an explanation computes, known before any work: `coalitions` per row (all 2^n, or the
    `budget`) for `rows` rows of `n_features` features, of shapiq index `index`."""

    n_features: int
    rows: int
    index: str
    budget: int | None

    @property
    def coalitions(self) -> int:
        return 2**self.n_features if self.budget is None else min(self.budget, 2**self.n_features)

    def text(self) -> str:
        how = "exact, every coalition" if self.budget is None else f"shapiq {APPROXIMATORS[self.index]}, budget"
        what = "Shapley values" if self.index == "SV" else "Shapley values and pairwise interactions"
        return (
            f"{what} of {self.rows} row(s) over {self.n_features} features: {self.coalitions} coalitions ({how}) × "
            f"{self.rows} row(s), the rows sharing each coalition's forward"
        )


def checked_plan(
    n_rows: int, n_features: int, *, rows: Iterable[int], order: int, budget: int | None
) -> tuple[list[int], Plan]:
    """The chosen rows (positions) and the `Plan` of explaining them in a table of `n_rows` rows and
    `n_features` features; RetrofitError naming the fix for bad rows, order or budget (a budget
    below `min_budget` of the order included), and for exact values of more than
    `EXACT_MAX_FEATURES` features."""
    chosen = check_rows(rows, n_rows)
    if order not in ORDERS:
        raise RetrofitError(f"order must be 1 (Shapley values) or 2 (and pairwise interactions), got {order!r}")
    index = ORDERS[order]
    if order > n_features:
        raise RetrofitError(f"order={order} needs at least {order} features; the table has {n_features}: use order=1")
    needed = min_budget(n_features, order)
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        raise RetrofitError(f"budget must be null (exact) or an int of coalitions per row, got {budget!r}")
    if budget is not None and budget < needed:
        raise RetrofitError(
            f"budget={budget} is below the {needed} coalitions per row that order={order} over {n_features} features "
            f"needs (shapiq's {APPROXIMATORS[index]} fits {needed} unknowns; fewer give unbounded values): "
            f"pass budget={needed} or more"
        )
    if budget is None and n_features > EXACT_MAX_FEATURES:
        raise RetrofitError(
            f"exact values of {n_features} features need 2^{n_features} coalitions; above {EXACT_MAX_FEATURES} "
            f"features pass a budget of coalitions per row for shapiq's {APPROXIMATORS[index]} "
            f"(e.g. budget={suggested_budget(n_features, order)})"
        )
    return chosen, Plan(n_features, len(chosen), index, budget)


def check_rows(rows: Iterable[int], n_rows: int) -> list[int]:
    """`rows` as distinct positions of a table of `n_rows` rows; RetrofitError naming the fix."""
    chosen = list(rows)
    bad = [row for row in chosen if isinstance(row, bool) or not isinstance(row, int | np.integer)]
    if not chosen or bad:
        raise RetrofitError(f"rows must be a non-empty list of row positions (ints), got {chosen!r}")
    outside = [row for row in chosen if not 0 <= row < n_rows]
    if outside:
        raise RetrofitError(f"rows {outside} are outside the table's {n_rows} rows (positions 0 to {n_rows - 1})")
    if len(set(chosen)) != len(chosen):
        raise RetrofitError(f"rows {chosen} name a row twice; list each row once")
    return [int(row) for row in chosen]
