"""The time an explanation takes, estimated after the fit and before the work from one timed
forward of a few random coalitions."""

import time
from typing import Any

import numpy as np

from retrofit.explanation.plan import Plan
from retrofit.removal import values

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
