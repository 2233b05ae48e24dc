"""A case's predictions on its test rows, and their interleaved timing.

`predict` is one call of a fitted (patched or stock) regressor: its mean prediction, its predictive
distribution and the tau it used. `predict_all` runs every model of a case once, for its
prediction, computing the stages before the in-context blocks once for all models that share them
(`retrofit.adapters.shared_stages`; bitwise the prediction without it); with `rounds` > 0 that
call is also each timed model's warm-up, and the timed models then predict `rounds` times
interleaved in rotating order (`retrofit.measure.timing.interleaved_times`), each call a full
forward (no shared stages; every call of a model returns the same). `timing_columns` turns those
seconds into a unit's `predict_seconds` (median) and `predict_time_ratio` (median, min, max of its
per-round ratios to the `BASELINE` model's time in the same round); NaN when untimed.
"""

import functools
import math
from collections.abc import Collection, Mapping
from contextlib import nullcontext
from typing import NamedTuple

import numpy as np
from tabpfn import TabPFNRegressor

from retrofit.adapters.shared_stages import StageCache
from retrofit.adapters.tau import taus_taken
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.metrics import BarPredictive
from retrofit.runner.costs import PhaseCosts
from retrofit.runner.units import BASELINE

TIMING_COLUMNS = ("predict_seconds", "predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max")


class Prediction(NamedTuple):
    """One model's prediction of a case's test rows: `mean` (float64, bit-identical to
    `model.predict(X)`), `distribution` (every row's predictive distribution) and `tau` (the median
    tau over every block, carrier, ensemble member and forward pass; NaN when nothing computes one)."""

    mean: np.ndarray
    distribution: BarPredictive
    tau: float


def predict(model: TabPFNRegressor, X: np.ndarray, stages: StageCache | None = None) -> Prediction:
    """One `model.predict(X, output_type="full")` call, as a `Prediction`; with `stages`, the shared
    stages through that cache (the same bits)."""
    with taus_taken() as taus, stages.reused(model) if stages is not None else nullcontext():
        full = model.predict(X, output_type="full")
    tau = float(np.median(np.concatenate([t.double().cpu().numpy().ravel() for t in taus]))) if taus else math.nan
    return Prediction(np.asarray(full["mean"], dtype="float64"), BarPredictive.from_tabpfn(full), tau)


def predict_all(
    models: Mapping[str, TabPFNRegressor],
    X: np.ndarray,
    rounds: int,
    untimed: Collection[str] = (),
    *,
    costs: PhaseCosts | None = None,
    shared: bool = True,
) -> tuple[dict[str, Prediction], dict[str, list[float]]]:
    """Every model's `predict` on `X` (one call each, the shared stages computed once unless
    `shared` is false), and the seconds per timed round of each model not in `untimed` (empty lists
    when `rounds` is 0 and for the untimed): `rounds` rotated rounds of full forwards
    (`interleaved_times`) after that call. `costs` gets the CPU seconds of both, as phases
    `predict` and `timing`."""
    costs = PhaseCosts() if costs is None else costs
    stages = StageCache() if shared else None
    with costs.phase("predict"):
        preds = {name: predict(model, X, stages) for name, model in models.items()}
    timed = [name for name in models if name not in untimed] if rounds else []
    calls = {name: functools.partial(predict, models[name], X) for name in timed}
    with costs.phase("timing"):
        times = interleaved_times(calls, rounds, warmup=False) if calls else {}
    return preds, {name: times.get(name, []) for name in models}


def timing_columns(times: Mapping[str, list[float]], name: str) -> dict[str, float]:
    """`predict_seconds` (median) and `predict_time_ratio` (median, min, max of the per-round ratios
    to `BASELINE`) of `name`; NaN when untimed."""
    if not times.get(name):
        return dict.fromkeys(TIMING_COLUMNS, math.nan)
    ratio, low, high = spread(paired_ratios({name: times[name], BASELINE: times[BASELINE]}, BASELINE)[name])
    return dict(zip(TIMING_COLUMNS, (spread(times[name])[0], ratio, low, high), strict=True))
