"""A case's predictions on its test rows, and their interleaved timing.

`predict` is one call of a fitted (patched or stock) regressor: its mean prediction, its predictive
distribution and the tau it used. `predict_all` runs every model of a case; with `rounds` > 0,
after one warm-up call each (its output is the prediction; every call of a model returns the
same), the models predict `rounds` times interleaved in rotating order
(`retrofit.measure.timing.interleaved_times`). `timing_columns` turns those seconds into a unit's
`predict_seconds` (median) and `predict_time_ratio` (median, min, max of its per-round ratios to
the `BASELINE` model's time in the same round); NaN when untimed.
"""

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from tabpfn import TabPFNRegressor

from retrofit.adapters.tau import taus_taken
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.metrics import BarPredictive

BASELINE = "baseline"
"""The variant that patches nothing; its prediction is every unit's reference."""
TIMING_COLUMNS = ("predict_seconds", "predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max")


class Prediction(NamedTuple):
    """One model's prediction of a case's test rows: `mean` (float64, bit-identical to
    `model.predict(X)`), `distribution` (every row's predictive distribution) and `tau` (the median
    tau over every block, O part, ensemble member and forward pass; NaN when nothing computes one)."""

    mean: np.ndarray
    distribution: BarPredictive
    tau: float


def predict(model: TabPFNRegressor, X: np.ndarray) -> Prediction:
    """One `model.predict(X, output_type="full")` call, as a `Prediction`."""
    with taus_taken() as taus:
        full = model.predict(X, output_type="full")
    tau = float(np.median(np.concatenate([t.double().cpu().numpy().ravel() for t in taus]))) if taus else math.nan
    return Prediction(np.asarray(full["mean"], dtype="float64"), BarPredictive.from_tabpfn(full), tau)


def predict_all(
    models: Mapping[str, TabPFNRegressor], X: np.ndarray, rounds: int
) -> tuple[dict[str, Prediction], dict[str, list[float]]]:
    """Every model's `predict` on `X`, and its seconds per timed round (empty lists when `rounds`
    is 0). Timed: one warm-up call each, then `rounds` rotated rounds (`interleaved_times`)."""
    preds: dict[str, Prediction] = {}
    if rounds == 0:
        return {name: predict(model, X) for name, model in models.items()}, {name: [] for name in models}

    def call(name: str):
        return lambda: preds.__setitem__(name, predict(models[name], X))

    times = interleaved_times({name: call(name) for name in models}, rounds)
    return preds, times


def timing_columns(times: Mapping[str, list[float]], name: str) -> dict[str, float]:
    """`predict_seconds` (median) and `predict_time_ratio` (median, min, max of the per-round ratios
    to `BASELINE`) of `name`; NaN when untimed."""
    if not times.get(name):
        return dict.fromkeys(TIMING_COLUMNS, math.nan)
    ratio, low, high = spread(paired_ratios(times, BASELINE)[name])
    return dict(zip(TIMING_COLUMNS, (spread(times[name])[0], ratio, low, high), strict=True))
