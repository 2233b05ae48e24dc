"""A case's predictions on its test rows, their interleaved timing, and each unit's results row.

`predict` is one call of a fitted (patched or stock) regressor: its mean, its predictive
distribution and the tau it used. `predict_all` predicts every model of a case once, the stages
before the in-context blocks computed once for all models that share them
(`retrofit.adapters.shared_stages`; bitwise the prediction without it). `time_all` times models
apart from those predictions, `rounds` full forwards each in rotating order
(`retrofit.measure.timing.interleaved_times`); every call must return the bits of the first (a
`RunnerError` otherwise: a non-deterministic host cannot be compared matched). `timing_columns`
gives a unit's `predict_seconds` (median) and `predict_time_ratio` (median, min, max of its
per-round ratios to `BASELINE`) and the `load` per core they ran under; NaN when untimed.
`case_columns` and `unit_row` assemble the row `retrofit.runner.store.UnitStore` writes and
`retrofit.results.record.UnitRecord` reads back.
"""

import functools
import math
import os
import platform
from collections.abc import Mapping
from contextlib import nullcontext
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from threadpoolctl import threadpool_info

from retrofit.adapters.shared_stages import StageCache
from retrofit.adapters.tau import taus_taken
from retrofit.errors import RunnerError
from retrofit.fitting import FittedCase
from retrofit.hosts.device import device_clock
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.metrics import BarPredictive, DistributionScores, rmse
from retrofit.results.record import stamp
from retrofit.runner.store import BASELINE, UnitKey

TIMING_COLUMNS = ("predict_seconds", "predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max", "load")


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


def predict_all(models: Mapping[str, TabPFNRegressor], X: np.ndarray, *, shared: bool = True) -> dict[str, Prediction]:
    """Every model's `Prediction` of `X`, one call each, the shared stages computed once unless
    `shared` is false."""
    stages = StageCache() if shared else None
    return {name: predict(model, X, stages) for name, model in models.items()}


def time_all(models: Mapping[str, TabPFNRegressor], X: np.ndarray, rounds: int) -> dict[str, list[float]]:
    """The seconds of each of `rounds` full-forward `predict` calls of every model, in rotated
    rounds (`interleaved_times`, wall time read after the models' device synchronizes,
    `retrofit.hosts.device.device_clock`; no warm-up call: the case's predictions warm the process); empty
    lists when `rounds` is 0. RunnerError when a model's calls disagree."""
    if not rounds:
        return {name: [] for name in models}
    calls: dict[str, list[Prediction]] = {name: [] for name in models}
    times = interleaved_times(
        {name: functools.partial(_predict_into, calls[name], model, X) for name, model in models.items()},
        rounds,
        clock=device_clock(next(iter(models.values())).devices_[0]),
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


def timing_columns(times: Mapping[str, list[float]], name: str, load: float = math.nan) -> dict[str, float]:
    """`predict_seconds` (median) and `predict_time_ratio` (median, min, max of the per-round ratios
    to `BASELINE`) of `name`, and the `load` per core they ran under (`load_per_core`); NaN when untimed."""
    if not times.get(name):
        return dict.fromkeys(TIMING_COLUMNS, math.nan)
    ratio, low, high = spread(paired_ratios({name: times[name], BASELINE: times[BASELINE]}, BASELINE)[name])
    return dict(zip(TIMING_COLUMNS, (spread(times[name])[0], ratio, low, high, load), strict=True))


def load_per_core() -> float:
    """The 1-minute load average per core now (`os.getloadavg() / os.cpu_count()`): what a timing ran beside."""
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def case_columns(
    ran: Mapping[str, Any], fitted: FittedCase, baseline: Prediction, baseline_seconds: float
) -> dict[str, Any]:
    """The columns every unit of a case shares: what ran and under which settings (`ran`,
    `retrofit.runner.case.Case.columns`), the sizes of `fitted`'s split, the baseline's RMSE on the
    test rows and its predict seconds (`baseline_seconds`), the fit time, tabpfn's version and the
    `machine`."""
    data = fitted.data
    return {
        **ran,
        "n_train": len(data.y_train),
        "n_test": len(data.y_test),
        "n_features": data.X_train.shape[1],
        "n_categorical": len(data.categorical_indices),
        "n_missing_target": fitted.table.n_missing_target,
        "baseline_rmse": rmse(data.y_test, baseline.mean),
        "baseline_predict_seconds": baseline_seconds,
        "fit_seconds": fitted.fit_seconds,
        "tabpfn_version": version("tabpfn"),
        "machine": machine(),
    }


@functools.cache
def machine() -> str:
    """The machine computing here, as a reproduction line names it: the CPU model (`/proc/cpuinfo`,
    else the platform's), the BLAS kernel numpy runs (`threadpoolctl`) and torch's SIMD level."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = models[0] if models else (platform.processor() or platform.machine())
    blas = [
        f"{i['internal_api']} {i.get('architecture', '')}".strip() for i in threadpool_info() if i["user_api"] == "blas"
    ]
    return (
        f"{cpu}; BLAS {', '.join(dict.fromkeys(blas)) or 'not found'}; torch {torch.backends.cpu.get_cpu_capability()}"
    )


def unit_row(
    common: Mapping[str, Any],
    labels: Mapping[str, Any],
    key: UnitKey,
    prediction: Prediction,
    baseline_scores: DistributionScores,
    y_test: Any,
    timing: Mapping[str, float],
    patched: Any,
) -> dict[str, Any]:
    """The row of the unit `key`: `common` (`case_columns`), its `labels` (`variant`, and the
    decomposition's `arm` and `arm_extra` as this sweep gives them: a reader relabels stored rows
    by its own case), the RMSE of `prediction` on `y_test` and its change in % of the
    baseline's, its distribution scores matched to `baseline_scores`, its `timing` columns (times
    and the timing settings they ran under), the settings `patched` used (`effective_hparams`), the
    tau it took and `stamp()`."""
    variant_rmse = rmse(y_test, prediction.mean)
    baseline_rmse = common["baseline_rmse"]
    return {
        **common,
        **labels,
        "hparams": key.hparams,
        "rmse": variant_rmse,
        "delta_rmse_pct": 100.0 * (variant_rmse - baseline_rmse) / baseline_rmse,
        **DistributionScores.of(y_test, prediction.distribution).matched(baseline_scores),
        **timing,
        **effective_hparams(patched),
        "tau": prediction.tau,
        **stamp(),
    }


def effective_hparams(patched: Any) -> dict[str, Any]:
    """The tau rule, `eps_den` and `eps_mode` the patched model uses, read off its `retrofit_report_`.

    `tau_rule` is the rule as applied: `c=<c> (calibrated)` (tau = c · median ||h||² of the context
    carriers, computed per layer and ensemble member at predict time) or `<value> (absolute)`;
    empty for the baseline, which patches nothing. `tau_c`: that c (None unless calibrated). The
    tau values themselves are taken at predict time (`retrofit.runner.predictions.predict`).
    """
    variant = patched.retrofit_report_.variant
    rule = variant.tau
    tau_rule = ""
    if rule is not None:
        tau_rule = f"c={rule.c:g} (calibrated)" if rule.mode == "calibrated" else f"{rule.value:g} (absolute)"
    tau_c = rule.c if rule is not None and rule.mode == "calibrated" else None
    return {"tau_rule": tau_rule, "tau_c": tau_c, "eps_den": variant.eps_den, "eps_mode": variant.eps_mode}
