"""The time an explanation takes, estimated after the fit and before the work from one timed
forward of a few random coalitions, and the refusal of exact values that would take too long."""

import time
from typing import Any

import numpy as np

from retrofit.errors import RetrofitError
from retrofit.explanation.plan import APPROXIMATORS, Plan
from retrofit.explanation.settings import ExplainSettings
from retrofit.removal import values
from retrofit.removal.game import min_budget

PROBE = 8
"""Coalitions in the timed forward the estimate is made from."""


def estimate_seconds(model: Any, X_rows: np.ndarray, plan: Plan) -> float:
    """Seconds for all of `plan`'s coalitions, from one timed forward of `PROBE` random ones (after
    an untimed one, which pays the first call's one-off costs)."""
    k = min(PROBE, plan.coalitions)
    probe = np.random.default_rng(0).random((k, plan.n_features)) < 0.5
    values(model, X_rows, probe[:1])
    start = time.perf_counter()
    values(model, X_rows, probe)
    return (time.perf_counter() - start) / k * plan.coalitions


def check_time(plan: Plan, seconds: float, settings: ExplainSettings, *, threads: int, device: str) -> None:
    """RetrofitError, one line, where exact values (`budget` None) would take `seconds`, over
    `settings.max_seconds`: it names the estimate's inputs (rows, n_estimators, the `threads` and
    `device` it ran on) and every knob that would shorten the work from there (a budget that would
    fit, never below `min_budget`; fewer rows, estimators or threads only where there are more than
    one), never one already set."""
    if plan.budget is not None or seconds <= settings.max_seconds:
        return
    fits = max(min_budget(plan.n_features, settings.order), int(plan.coalitions * settings.max_seconds / seconds))
    knobs = [f"pass budget={fits} (coalitions per row for shapiq's {APPROXIMATORS[plan.index]})"]
    knobs += ["fewer rows"] * (plan.rows > 1) + ["a smaller n_estimators"] * (settings.n_estimators > 1)
    knobs += ["threads=1 where other processes share the CPU"] * (threads > 1)
    knobs += ["device=cuda on a GPU"] * (device != "cuda")
    knobs += ["fewer features (each one halves the coalitions)"]
    raise RetrofitError(
        f"exact values need all {plan.coalitions} coalitions: about {seconds:.0f} s here for {plan.rows} row(s) with "
        f"n_estimators={settings.n_estimators}, threads={threads}, device={device}, over max_seconds="
        f"{settings.max_seconds:g}; to shorten it {', '.join(knobs[:-1])}, or {knobs[-1]}; "
        f"or allow it: max_seconds={seconds * 1.5:.0f}"
    )
