"""`retrofit.explain`: Shapley values (and pairwise interactions) of rows of a table in memory, by
declaring features absent in an o_closed host (`retrofit.removal`), with no refit.

One host regressor is fitted on every row of the table (cleaned and encoded as the sweep does,
`retrofit.data.whole`) with a fixed column order (`FEATURE_SHIFT_METHOD: None`, which removal
needs), O-closed (`retrofit.retrofit(fitted, "o_closed")`), and each chosen row's prediction is
split among its features: v(S) is the closed model's prediction given the table with only S's
features (context and query), v(∅) the model given the targets alone. Every chosen row shares the
one fitted context, so each coalition is one batch element evaluated once for all rows.

Before any work `say` gets the plan (`Plan`: coalitions × rows, exact or shapiq's approximator);
after the fit, one timed forward of a few coalitions gives the estimate of the whole, and a
progress bar (tqdm) counts the coalitions. `budget=None` enumerates all 2^n coalitions (shapiq's
ExactComputer) while that takes under `EXACT_SECONDS`; above it, or above
`retrofit.removal.game.EXACT_MAX_FEATURES` features, pass `budget` (coalitions per row) for shapiq's
KernelSHAP (order 1) or KernelSHAP-IQ (order 2) over the same value function.
"""

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from retrofit.adapters import ARCHITECTURES
from retrofit.comparison import TARGET, feature_frame
from retrofit.data import Table, frame_table, whole
from retrofit.errors import RetrofitError
from retrofit.fitting import fit_host
from retrofit.hosts import available, check_checkpoint, get_path
from retrofit.hosts.regressor import resolve_device
from retrofit.hosts.validation import architecture_name
from retrofit.measure.timing import torch_threads
from retrofit.patching import retrofit
from retrofit.removal import values
from retrofit.removal.game import EXACT_MAX_FEATURES
from retrofit.removal.game import explain as removal_game
from retrofit.variants import resolve_variant

EXACT_SECONDS = 60.0
"""`budget=None` enumerates every coalition while the estimate says it takes under this many seconds
(`max_seconds` by default)."""
ORDERS = {1: "SV", 2: "k-SII"}
"""`order` -> the shapiq index computed: Shapley values, or pairwise Shapley interactions (k-SII)."""
APPROXIMATORS = {"SV": "KernelSHAP", "k-SII": "KernelSHAP-IQ"}
"""The shapiq approximator that a `budget` runs, per index (`retrofit.removal.game.INDICES`)."""
PROBE = 8
"""Coalitions in the timed forward the estimate is made from."""
CHUNKS = 20
"""The progress bar moves in about this many steps (calls of `retrofit.removal.values`)."""
COLUMNS = ("row", "order", "features", "value", "prediction", "empty_prediction")
"""The columns of `explain`'s frame, in order (`COLUMN_DOCS`)."""
COLUMN_DOCS = {
    "row": (
        "integer",
        "the explained row: its position in the table (0-based, after rows without a target are dropped)",
    ),
    "order": ("count", "1: a feature's Shapley value (with order=2 its k-SII main effect); 2: a pair's k-SII"),
    "features": ("label", "the feature, or the pair `a × b`"),
    "value": ("target units", "its share of prediction − empty_prediction (a row's values sum to that difference)"),
    "prediction": ("target units", "the closed host's prediction for the row, every feature present"),
    "empty_prediction": ("target units", "the prediction with every feature absent (the targets alone)"),
}
"""Column -> (unit, meaning) of `explain`'s frame and the explain job's CSV."""


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


def explain(
    X: Any,
    y: Any,
    *,
    rows: Iterable[int] = (0,),
    order: int = 1,
    budget: int | None = None,
    max_seconds: float = EXACT_SECONDS,
    host: str | os.PathLike = "tiny_v3",
    n_estimators: int = 8,
    seed: int = 0,
    categorical: Sequence[str] = (),
    device: str = "cpu",
    threads: int | None = None,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per explained row × feature (and pair, with order=2): `COLUMNS`.

    X, y: the features (a DataFrame, or an array whose columns become x0, x1, ...) and the target;
        or a DataFrame holding both and the name of its target column as `y` (as `retrofit.compare`).
    rows: positions of the rows to explain in the table (0-based, after rows without a target go).
    order: 1 (Shapley values) or 2 (Shapley values and pairwise interactions, k-SII).
    budget: None enumerates every coalition (refused, naming the time, where the estimate is over
        `max_seconds`); an int is the coalitions per row for shapiq's approximator.
    host: an o_closed-capable host (tabpfn_v3 or v3.5): a shipped host name, a tabpfn model name or
        a checkpoint (`retrofit.hosts.check_checkpoint`). seed: tabpfn's random_state.
    categorical: numeric columns that are categories (text columns always are).
    threads: torch's CPU threads while it runs (None: as they are; on a shared machine 1 avoids
        oversubscription, which slows the forwards by an order of magnitude).
    say: where the plan and the estimate go (before the work); progress: a bar over the coalitions.
    Raises DatasetError / RetrofitError naming the fix, before any fit where it can be known then.
    """
    table = frame_table(feature_frame(X, y), y if isinstance(y, str) else TARGET, categorical=categorical)
    host_path = get_path(host) if host in available() else check_checkpoint(host)
    return explain_table(
        table,
        rows=rows,
        order=order,
        budget=budget,
        max_seconds=max_seconds,
        host_path=host_path,
        n_estimators=n_estimators,
        seed=seed,
        device=device,
        threads=threads,
        say=say,
        progress=progress,
    )


def explain_table(
    table: Table,
    *,
    rows: Iterable[int],
    order: int,
    budget: int | None,
    max_seconds: float,
    host_path: os.PathLike,
    n_estimators: int,
    seed: int,
    device: str,
    threads: int | None,
    say: Callable[[str], None],
    progress: bool,
) -> pd.DataFrame:
    """`explain` of a cleaned table on the checked checkpoint `host_path` (the explain job's entry)."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise RetrofitError(f"threads must be None or an int >= 1, got {threads!r}")
    chosen = _rows(rows, len(table.X))
    index = _index(order)
    n_features = table.X.shape[1]
    if order > n_features:
        raise RetrofitError(f"order={order} needs at least {order} features; the table has {n_features}: use order=1")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 2):
        raise RetrofitError(f"budget must be null (exact) or an int >= 2 coalitions per row, got {budget!r}")
    if budget is None and n_features > EXACT_MAX_FEATURES:
        raise RetrofitError(
            f"exact values of {n_features} features need 2^{n_features} coalitions; above {EXACT_MAX_FEATURES} "
            f"features pass a budget of coalitions per row for shapiq's {APPROXIMATORS[index]} (e.g. budget=512)"
        )
    closed = resolve_variant("o_closed")
    refusal = ARCHITECTURES[architecture_name(host_path)].refusal(closed)
    if refusal:
        raise RetrofitError(f"explaining by removal needs an o_closed host: {refusal}")
    plan = Plan(n_features, len(chosen), index, budget)
    say(plan.text())
    with torch_threads(torch.get_num_threads() if threads is None else threads):
        data = whole(table)
        fitted, _ = fit_host(
            host_path,
            data,
            random_state=seed,
            n_estimators=n_estimators,
            device=resolve_device(device),
            inference_config={"FEATURE_SHIFT_METHOD": None},  # removal needs a fixed column order
        )
        model = retrofit(fitted, "o_closed")
        X_rows = data.X_train[chosen]
        seconds = _estimate(model, X_rows, plan)
        probe = min(PROBE, plan.coalitions)
        say(f"one forward of {probe} coalitions × {len(chosen)} row(s): about {seconds:.0f} s in all")
        if budget is None and seconds > max_seconds:
            raise RetrofitError(
                f"exact values need all {plan.coalitions} coalitions, about {seconds:.0f} s here (over max_seconds="
                f"{max_seconds:g}): pass a budget of coalitions per row for shapiq's {APPROXIMATORS[index]} "
                f"(e.g. budget={plan.coalitions // 4}), or a larger max_seconds"
            )
        chunk = max(PROBE, -(-plan.coalitions // CHUNKS))
        with tqdm(total=plan.coalitions, unit="coalition", disable=not progress, desc="explain") as bar:

            def value_function(coalitions_KF: np.ndarray) -> np.ndarray:
                parts = []
                for start in range(0, len(coalitions_KF), chunk):
                    parts.append(values(model, X_rows, coalitions_KF[start : start + chunk]))
                    bar.update(len(parts[-1]))
                return np.concatenate(parts)

            result = removal_game(value_function, n_features, budget, index, order, random_state=seed)
        ends = values(model, X_rows, np.array([[True] * n_features, [False] * n_features]))
        return _frame(chosen, data.feature_names, result, order, ends)


def _rows(rows: Iterable[int], n_rows: int) -> list[int]:
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


def _index(order: int) -> str:
    """The shapiq index of `order`; RetrofitError for another order."""
    if order not in ORDERS:
        raise RetrofitError(f"order must be 1 (Shapley values) or 2 (and pairwise interactions), got {order!r}")
    return ORDERS[order]


def _estimate(model: Any, X_rows: np.ndarray, plan: Plan) -> float:
    """Seconds for all of `plan`'s coalitions, from one timed forward of `PROBE` random ones (after
    an untimed one, which pays the first call's one-off costs)."""
    k = min(PROBE, plan.coalitions)
    probe = np.random.default_rng(0).random((k, plan.n_features)) < 0.5
    values(model, X_rows, probe[:1])
    start = time.perf_counter()
    values(model, X_rows, probe)
    return (time.perf_counter() - start) / k * plan.coalitions


def _frame(chosen: list[int], names: Sequence[str], result: Any, order: int, ends: np.ndarray) -> pd.DataFrame:
    """`COLUMNS` of the values `result` (SV: (rows, n) array; k-SII: one InteractionValues per row)."""
    records = []
    for position, row in enumerate(chosen):
        first = result[position] if order == 1 else result[position].get_n_order_values(1)
        terms = [(1, name, first[i]) for i, name in enumerate(names)]
        if order == 2:
            pairs = result[position].get_n_order_values(2)
            n = len(names)
            terms += [(2, f"{names[i]} × {names[j]}", pairs[i, j]) for i in range(n) for j in range(i + 1, n)]
        records += [
            {
                "row": row,
                "order": k,
                "features": label,
                "value": float(value),
                "prediction": float(ends[0, position]),
                "empty_prediction": float(ends[1, position]),
            }
            for k, label, value in terms
        ]
    return pd.DataFrame(records, columns=list(COLUMNS))
