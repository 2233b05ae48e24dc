"""A case's predictions on its test rows, and the interleaved timing of its models.

`predict` is one call of a fitted (patched or stock) regressor: its mean prediction, its predictive
distribution and the tau it used. `predict_all` predicts every model of a case once, computing the
stages before the in-context blocks once for all models that share them
(`retrofit.adapters.shared_stages`; bitwise the prediction without it). `time_all` times models
apart from those predictions: each `rounds` times, interleaved in rotating order
(`retrofit.measure.timing.interleaved_times`), each call a full forward (no shared stages); every
call of a model must return the same bits as its first (a `RunnerError` otherwise: a host that
predicts non-deterministically cannot be compared matched). The runner times regressors of its own
(`Case.timing_members` ensemble members, `retrofit.runner.case`), so the timing costs a fraction
of the predictions. `timing_columns` turns those seconds into a unit's `predict_seconds` (median)
and `predict_time_ratio` (median, min, max of its per-round ratios to the `BASELINE` model's time in
the same round); NaN when untimed.
"""

import functools
import math
from collections.abc import Mapping
from contextlib import nullcontext
from typing import NamedTuple

import numpy as np
from tabpfn import TabPFNRegressor

from retrofit.adapters.shared_stages import StageCache
from retrofit.adapters.tau import taus_taken
from retrofit.errors import RunnerError
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

    def same_as(self, other: "Prediction") -> bool:
        """Bitwise equal: the mean, every row's predictive distribution (logits and borders) and the
        tau (NaN equal to NaN)."""
        same_tau = (math.isnan(self.tau) and math.isnan(other.tau)) or self.tau == other.tau
        bars = (
            (self.distribution.logits_NK, other.distribution.logits_NK),
            (self.distribution.borders_B, other.distribution.borders_B),
        )
        return np.array_equal(self.mean, other.mean) and all(np.array_equal(a, b) for a, b in bars) and same_tau


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
    *,
    costs: PhaseCosts | None = None,
    shared: bool = True,
) -> dict[str, Prediction]:
    """Every model's `Prediction` of `X`, one call each, the shared stages computed once unless
    `shared` is false; `costs` gets their CPU seconds as phase `predict`."""
    stages = StageCache() if shared else None
    with (PhaseCosts() if costs is None else costs).phase("predict"):
        return {name: predict(model, X, stages) for name, model in models.items()}


def time_all(
    models: Mapping[str, TabPFNRegressor], X: np.ndarray, rounds: int, *, costs: PhaseCosts | None = None
) -> dict[str, list[float]]:
    """The seconds of each of `rounds` full-forward `predict` calls of every model, in rotated
    rounds (`interleaved_times`; no warm-up call: the case's predictions warm the process); empty
    lists when `rounds` is 0. RunnerError when a model's calls disagree. `costs` gets their CPU
    seconds as phase `timing`."""
    if not rounds:
        return {name: [] for name in models}
    calls: dict[str, list[Prediction]] = {name: [] for name in models}
    with (PhaseCosts() if costs is None else costs).phase("timing"):
        times = interleaved_times(
            {name: functools.partial(_predict_into, calls[name], model, X) for name, model in models.items()},
            rounds,
            warmup=False,
        )
    for name, outputs in calls.items():
        if not all(outputs[0].same_as(later) for later in outputs[1:]):
            raise RunnerError(
                f"{name}: its {len(outputs)} timed predict calls returned different predictions, so the host "
                "computes non-deterministically on this device and no matched comparison can be made; make the "
                "device deterministic (torch.use_deterministic_algorithms(True)) or leave it untimed (timing.rounds=0)"
            )
    return times


def _predict_into(outputs: list[Prediction], model: TabPFNRegressor, X: np.ndarray) -> None:
    """One full-forward `predict`, appended to `outputs` (a timed call)."""
    outputs.append(predict(model, X))


def timing_columns(times: Mapping[str, list[float]], name: str) -> dict[str, float]:
    """`predict_seconds` (median) and `predict_time_ratio` (median, min, max of the per-round ratios
    to `BASELINE`) of `name`; NaN when untimed."""
    if not times.get(name):
        return dict.fromkeys(TIMING_COLUMNS, math.nan)
    ratio, low, high = spread(paired_ratios({name: times[name], BASELINE: times[BASELINE]}, BASELINE)[name])
    return dict(zip(TIMING_COLUMNS, (spread(times[name])[0], ratio, low, high), strict=True))
