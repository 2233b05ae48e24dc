"""A case's predictions on its test rows, and their interleaved timing.

`predict` is one call of a fitted (patched or stock) regressor: its mean prediction, its predictive
distribution and the tau it used. `predict_all` predicts every model of a case: the untimed ones
(the decomposition arms, and every model when there are no timing rounds) once each, computing the
stages before the in-context blocks once for all models that share them
(`retrofit.adapters.shared_stages`; bitwise the prediction without it), and then the timed models
`rounds` times each, interleaved in rotating order (`retrofit.measure.timing.interleaved_times`),
each call a full forward (no shared stages). A timed model's first call is its prediction, every
later call must return the same bits (a `RunnerError` otherwise: a host that predicts
non-deterministically cannot be compared matched), so a timed model costs `rounds` forwards, not
`rounds` + 1. `timing_columns` turns those seconds into a unit's `predict_seconds` (median) and
`predict_time_ratio` (median, min, max of its per-round ratios to the `BASELINE` model's time in
the same round); NaN when untimed.
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
    rounds: int,
    untimed: Collection[str] = (),
    *,
    costs: PhaseCosts | None = None,
    shared: bool = True,
) -> tuple[dict[str, Prediction], dict[str, list[float]]]:
    """Every model's `Prediction` of `X`, and the seconds per timed round of each model (empty lists
    for the untimed). The models in `untimed`, and all of them when `rounds` is 0, predict once each
    (the shared stages computed once unless `shared` is false); then each other model predicts
    `rounds` times in rotated rounds of full forwards (`interleaved_times`), its first call being
    its prediction. RunnerError when a timed model's calls disagree. `costs` gets the CPU seconds of
    both, as phases `predict` and `timing`."""
    costs = PhaseCosts() if costs is None else costs
    timed = [name for name in models if name not in untimed] if rounds else []
    stages = StageCache() if shared else None
    with costs.phase("predict"):
        preds = {name: predict(model, X, stages) for name, model in models.items() if name not in timed}
    calls: dict[str, list[Prediction]] = {name: [] for name in timed}
    with costs.phase("timing"):
        times = (
            interleaved_times(
                {name: functools.partial(_predict_into, calls[name], models[name], X) for name in timed},
                rounds,
                warmup=False,
            )
            if timed
            else {}
        )
    for name, outputs in calls.items():
        if not all(outputs[0].same_as(later) for later in outputs[1:]):
            raise RunnerError(
                f"{name}: its {len(outputs)} timed predict calls returned different predictions, so the host "
                "computes non-deterministically on this device and no matched comparison can be made; make the "
                "device deterministic (torch.use_deterministic_algorithms(True)) or predict once (timing.rounds=0)"
            )
        preds[name] = outputs[0]
    return {name: preds[name] for name in models}, {name: times.get(name, []) for name in models}


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
