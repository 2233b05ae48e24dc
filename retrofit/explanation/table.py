"""`explain_table`: the explanation of a cleaned table's rows on a checked checkpoint (the explain
job's entry; `retrofit.explain` cleans a table in memory and calls it): plan, fit, estimate, values."""

import os
from collections.abc import Callable
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from retrofit.adapters import ARCHITECTURES
from retrofit.data import Split, Table, whole
from retrofit.errors import RetrofitError
from retrofit.explanation.columns import values_frame
from retrofit.explanation.estimate import PROBE, check_time, estimate_seconds
from retrofit.explanation.plan import Plan, checked_plan
from retrofit.explanation.settings import ExplainSettings
from retrofit.fitting import fit_host
from retrofit.hosts import make_regressor
from retrofit.hosts.regressor import resolve_device
from retrofit.hosts.validation import architecture_name
from retrofit.measure.timing import torch_threads
from retrofit.member_columns import fixed_orders
from retrofit.patching import retrofit
from retrofit.removal import values
from retrofit.removal.game import explain as removal_game
from retrofit.variants import resolve_variant

CHUNKS = 20
"""The progress bar moves in about this many steps (calls of `retrofit.removal.values`)."""


def explain_table(
    table: Table, host_path: os.PathLike, settings: ExplainSettings, *, say: Callable[[str], None], progress: bool
) -> pd.DataFrame:
    """`retrofit.explain` of a cleaned table on the checked checkpoint `host_path` with `settings`:
    the plan to `say`, the fit, the estimate to `say` (RetrofitError where exact values would take
    over `settings.max_seconds`), then the values (`retrofit.explanation.columns.COLUMNS`)."""
    threads, budget = settings.threads, settings.budget
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise RetrofitError(f"threads must be None or an int >= 1, got {threads!r}")
    limit = settings.max_seconds
    if isinstance(limit, bool) or not isinstance(limit, Real) or not limit >= 0:  # NaN fails >= 0
        raise RetrofitError(f"max_seconds must be a number of seconds >= 0 (e.g. 60; inf: no limit), got {limit!r}")
    n_features = table.X.shape[1]
    chosen, the_plan = checked_plan(len(table.X), n_features, rows=settings.rows, order=settings.order, budget=budget)
    refusal = ARCHITECTURES[architecture_name(host_path)].refusal(resolve_variant("o_closed"))
    if refusal:
        raise RetrofitError(f"explaining by removal needs an o_closed host: {refusal}")
    device = resolve_device(settings.device)
    say(the_plan.text())
    with torch_threads(torch.get_num_threads() if threads is None else threads):
        data = whole(table)
        model = _closed_model(host_path, data, settings, device)
        X_rows = data.X_train[chosen]
        seconds = estimate_seconds(model, X_rows, the_plan)
        probe = min(PROBE, the_plan.coalitions)
        say(f"one forward of {probe} coalitions × {len(chosen)} row(s): about {seconds:.0f} s in all")
        check_time(the_plan, seconds, settings, threads=torch.get_num_threads(), device=device)
        result = _game(model, X_rows, the_plan, order=settings.order, seed=settings.seed, progress=progress)
        ends = values(model, X_rows, np.array([[True] * n_features, [False] * n_features]))
        return values_frame(chosen, data.feature_names, result, settings.order, ends)


def _closed_model(host_path: os.PathLike, data: Split, settings: ExplainSettings, device: str) -> Any:
    """The host fitted on every row of `data` on `device` with the fixed column and category orders
    removal needs over its stored preset (`retrofit.member_columns.fixed_orders`), O-closed."""
    stored = make_regressor(host_path, n_estimators=1, device=device).get_inference_config()
    fitted, _ = fit_host(
        host_path,
        data,
        random_state=settings.seed,
        n_estimators=settings.n_estimators,
        device=device,
        inference_config=fixed_orders(stored),
    )
    return retrofit(fitted, "o_closed")


def _game(model: Any, X_rows: np.ndarray, plan: Plan, *, order: int, seed: int, progress: bool) -> Any:
    """shapiq's values of `plan` over the removal game of `model` on `X_rows`, the coalitions
    evaluated in chunks that move a progress bar (`CHUNKS` steps)."""
    chunk = max(PROBE, -(-plan.coalitions // CHUNKS))
    with tqdm(total=plan.coalitions, unit="coalition", disable=not progress, desc="explain") as bar:

        def value_function(coalitions_KF: np.ndarray) -> np.ndarray:
            parts = []
            for start in range(0, len(coalitions_KF), chunk):
                parts.append(values(model, X_rows, coalitions_KF[start : start + chunk]))
                bar.update(len(parts[-1]))
            return np.concatenate(parts)

        return removal_game(value_function, plan.n_features, plan.budget, plan.index, order, random_state=seed)
