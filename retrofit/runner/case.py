"""One case: fit ONE regressor on one dataset × seed, then every requested variant on that fit;
each unit's prediction, timing and results row.

Matched comparison: all units of a case share the split, the fitted preprocessing, the ensemble
members and the `random_state` (= the seed). The baseline, the frozen stock host
(`retrofit.retrofit(fitted, "baseline")`), predicts once per case; each variant is
`retrofit.retrofit(fitted, variant, **hparams)` on the same fit, and one that patches nothing
reuses the baseline's prediction. `run_case` skips the units the store holds under their
identity (`Case.identities`, `retrofit.runner.identity`; unless `overwrite`: a case whose units
are all finished loads no data), predicts and times the rest and stores their rows.

Each thing is made once: a case's identities when first asked (`Case.identities`), its split once
per process (`case_split`, shared by the sweep's check and the case's fit), each unit's variant
once per process (`UnitSpec.resolved`, which the patch takes as it is).

`predict` is one call of a fitted (patched or stock) regressor: its mean, its predictive
distribution and the tau it used. `predict_all` predicts every model of a case once, the stages
before the in-context blocks computed once for all models that share them
(`retrofit.adapters.shared_stages`; bitwise the prediction without it). Timing
(`Case.timing_rounds` rounds, 0 for none) runs apart from those predictions, on a regressor of its
own: the case's split and `random_state` fitted with `Case.timing_members` members (1 by default),
the stock host and each timed unit's variant on it, `rounds` full forwards each in rotating order
(`time_all`, `retrofit.measure.timing.interleaved_times`); every call must return the bits of the
first (a `RunnerError` otherwise: a non-deterministic host cannot be compared matched). The
members are independent forwards of one network, so the patched / stock ratio of one member is
the ensemble's; no prediction of the case comes from a timed call. `timing_columns` gives a
unit's `predict_seconds` (median) and `predict_time_ratio` (median, min, max of its per-round
ratios to `BASELINE`) and the `load` per core they ran under; NaN when untimed. `case_columns`
and `unit_row` assemble the row `retrofit.runner.store.UnitStore` writes and
`retrofit.results.record.UnitRecord` reads back.
"""

import functools
import json
import logging
import math
import os
import platform
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from threadpoolctl import threadpool_info

from retrofit.adapters.shared_stages import StageCache
from retrofit.adapters.tau import taus_taken
from retrofit.data import DatasetSpec, Split, Table
from retrofit.data.prepare import MAX_SEED
from retrofit.errors import RunnerError
from retrofit.fitting import PRECISIONS, CaseSpec, FittedCase, case_data, fit_split
from retrofit.hosts.device import device_clock, device_label
from retrofit.hosts.regressor import MAX_MEMBERS
from retrofit.measure.timing import interleaved_times, paired_ratios, spread, torch_threads
from retrofit.metrics import BarPredictive, DistributionScores, matched_deltas, rmse
from retrofit.patching import patch_variant
from retrofit.results.record import stamp
from retrofit.runner import unit_bar
from retrofit.runner.identity import case_settings, data_digest, host_digest, unit_identities
from retrofit.runner.store import UnitStore
from retrofit.unit_key import UnitKey, hparams_text
from retrofit.variants import Variant, resolve_variant

__all__ = ["BASELINE", "Case", "UnitSpec", "case_split", "check_cases", "run_case"]

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""The variant that patches nothing; its prediction is every unit's reference."""


@dataclass(frozen=True)
class UnitSpec:
    """A variant plus the hyper-parameter overrides passed to `retrofit.retrofit`.

    `variant` names a built-in variant, or, with `spec` (a full variant mapping, e.g. a file from a
    Hydra search path), labels that spec. `hparams`: keys of `retrofit.variants.HPARAMS`, e.g.
    `{"tau": {"mode": "calibrated", "c": 0.01}}`; they are part of the unit's key. `timed=False`
    leaves the unit out of the interleaved timing (one predict call, NaN times), as for the
    decomposition arms (`retrofit.runner.sweep_config`), which also set `arm` (the arm this unit
    realises) and `arm_extra` (a unit that runs only for the decomposition); both are labels of the
    unit's record, not part of its key.
    """

    variant: str
    hparams: dict[str, Any] = field(default_factory=dict)
    spec: Mapping[str, Any] | None = None
    timed: bool = True
    arm: str = ""
    arm_extra: bool = False

    def resolved(self) -> Variant:
        """The validated variant this unit runs (`resolved_variant`: once per process)."""
        return resolved_variant(self.variant if self.spec is None else self.spec, self.hparams)

    def patch(self, regressor: TabPFNRegressor) -> TabPFNRegressor:
        """`retrofit.retrofit` of this unit's variant on the fitted `regressor` (the variant as resolved)."""
        return patch_variant(regressor, self.resolved())


def resolved_variant(variant: str | Mapping[str, Any], hparams: Mapping[str, Any]) -> Variant:
    """`retrofit.variants.resolve_variant(variant, **hparams)`, resolved once per process for each
    variant (a name or a spec) and hyper-parameters, as plain values (a `Variant` is frozen, so
    every unit that runs it may share it); a value JSON cannot hold is resolved (and refused) uncached."""
    try:
        key = json.dumps([variant, hparams], sort_keys=True, allow_nan=True)
    except TypeError:
        return resolve_variant(variant, **hparams)
    return _resolved(key)


@functools.lru_cache(maxsize=256)
def _resolved(key: str) -> Variant:
    variant, hparams = json.loads(key)
    return resolve_variant(variant, **hparams)


MAX_THREADS = 1_024
MAX_ROUNDS = 1_000
"""Bounds of the thread count and the timing rounds (beyond them, a run would not end)."""


@dataclass(frozen=True, kw_only=True)
class Case(CaseSpec):
    """Everything one case needs, built from a Hydra config by `retrofit.runner.sweep_config`: the fitted
    case it is (`retrofit.fitting.CaseSpec`, which it hands to the fit as itself) and its units.

    `runs_dir`: the unit store (a local cache); `device`: resolved ("cpu" or "cuda");
    `timing_rounds`: interleaved timing rounds per timed unit, 0 for none; `timing_members`: the
    ensemble members of the regressor the timing runs on (module docstring); `threads`: torch's
    CPU threads while the case runs (part of the identity: more threads may split sums
    differently, so the predictions may differ in their last bits).
    """

    host: str
    units: tuple[UnitSpec, ...]
    runs_dir: Path
    overwrite: bool = False
    timing_rounds: int = 0
    timing_members: int = 1
    threads: int = 1

    def __post_init__(self) -> None:
        """RunnerError naming the first setting out of range, with the fix (before any work)."""
        for name, low, high, example in (
            ("seed", 0, MAX_SEED, "seed=1"),
            ("n_estimators", 1, MAX_MEMBERS, "n_estimators=8"),
            ("threads", 1, MAX_THREADS, "threads=1"),
            ("timing_rounds", 0, MAX_ROUNDS, "timing.rounds=3"),
            ("timing_members", 1, MAX_MEMBERS, "timing.members=1"),
        ):
            value = getattr(self, name)
            if not _is_int(value) or not low <= value <= high:
                raise RunnerError(f"{name}={value!r}: must be an integer in [{low}, {high}], e.g. {example}")
        if not _is_number(self.test_size) or not 0 < self.test_size < 1:
            raise RunnerError(f"test_size={self.test_size!r}: must be a fraction in (0, 1), e.g. test_size=0.3")
        if self.precision not in PRECISIONS:
            raise RunnerError(f"precision={self.precision!r}: must be one of {sorted(PRECISIONS)}")
        if not isinstance(self.overwrite, bool):
            raise RunnerError(f"overwrite={self.overwrite!r}: must be true or false")

    @functools.cached_property
    def host_digest(self) -> str:
        """The digest of the host file's bytes (`retrofit.runner.identity.host_digest`), read once."""
        return host_digest(self.host_path)

    @functools.cached_property
    def data_digest(self) -> str:
        """The digest of what the dataset's rows are read from (`retrofit.runner.identity.data_digest`),
        read once."""
        return data_digest(self.dataset, self.base_dir)

    def columns(self) -> dict[str, Any]:
        """What this case ran and under which settings, as columns of its units' rows."""
        rounds, members = self.timing
        return {
            "dataset": self.dataset.name,
            "seed": self.seed,
            "host": self.host,
            "device": device_label(self.device),
            "n_estimators": self.n_estimators,
            "test_size": self.test_size,
            "precision": self.precision,
            "threads": self.threads,
            "timing_rounds": rounds,
            "timing_members": members,
            "host_digest": self.host_digest,
            "data_digest": self.data_digest,
        }

    @property
    def timing(self) -> tuple[int, int]:
        """The timing settings a timed unit's times come from: (rounds, members), (0, 0) untimed."""
        return (self.timing_rounds, self.timing_members) if self.timing_rounds else (0, 0)

    def key(self, unit: UnitSpec) -> UnitKey:
        """What `unit` of this case is called (`retrofit.unit_key.UnitKey`)."""
        return UnitKey(self.host, self.dataset.name, self.seed, unit.variant, hparams_text(unit.hparams))

    @functools.cached_property
    def identities(self) -> dict[UnitKey, str]:
        """Per unit, its identity (`retrofit.runner.identity.unit_identities`: this case's settings,
        the unit's key, its resolved variant and, timed, `timing`; the library versions and the
        code). Its file in the store is named by it. Computed once per case, when first asked: a
        sweep's finish reads the units its check named."""
        settings = case_settings(self, threads=self.threads, host=self.host_digest, data=self.data_digest)
        units = [(self.key(u), u.resolved(), self.timing if u.timed else (0, 0)) for u in self.units]
        return unit_identities(settings, units)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def reject_duplicates(keys: Iterable[UnitKey]) -> None:
    """Raise RunnerError listing every key that occurs more than once (before anything runs)."""
    seen: set[UnitKey] = set()
    duplicates = sorted({k for k in keys if k in seen or seen.add(k)})
    if duplicates:
        listed = ", ".join(k.label() for k in duplicates)
        raise RunnerError(f"duplicate units in this sweep: {listed}; remove the repeated override values")


def check_cases(cases: list[Case]) -> None:
    """Validate a whole sweep before it runs: no two datasets under one name, no unit twice in a
    case or in two equal cases (a repeated job, `seed=0,0`), none that two cases would run
    differently (another identity or labels); cases that differ in their variants share their
    baseline unit. Every case's data loads and splits. Raises RunnerError / DatasetError."""
    datasets: dict[str, DatasetSpec] = {}
    for case in cases:
        first = datasets.setdefault(case.dataset.name, case.dataset)
        if first != case.dataset:
            raise RunnerError(
                f"two datasets of this sweep are named {case.dataset.name!r} ({first} and {case.dataset}); "
                "give each its own name"
            )
        reject_duplicates(case.key(unit) for unit in case.units)
    if len({repr(case) for case in cases}) < len(cases):
        reject_duplicates(case.key(unit) for case in cases for unit in case.units)
    distinct = {(key, identity, repr(unit)) for case in cases for unit, (key, identity) in _units(case)}
    reject_duplicates(key for key, _, _ in distinct)
    for case in cases:
        case_split(case)


_SPLITS: dict[str, tuple[Table, Split]] = {}
"""The cleaned tables and splits made in this process (`case_split`), by what defines them."""


def case_split(case: Case) -> tuple[Table, Split]:
    """The cleaned table and the seeded split of `case` (`retrofit.fitting.case_data`), made once per
    process for its data's bytes (`Case.data_digest`), dataset spec, start directory, seed and
    test fraction: the sweep's check and a job run in the same process share it."""
    key = repr((case.data_digest, case.dataset, str(case.base_dir), case.seed, case.test_size))
    if key not in _SPLITS:
        _SPLITS[key] = case_data(case)
    return _SPLITS[key]


def _units(case: Case) -> list[tuple[UnitSpec, tuple[UnitKey, str]]]:
    """Each unit of `case` with its key and identity."""
    return list(zip(case.units, case.identities.items(), strict=True))


class _Untimed:
    """Phases not accounted (`run_case`'s default `costs`)."""

    def phase(self, name: str) -> nullcontext:
        return nullcontext()


def run_case(case: Case, *, costs: Any = None, shared_stages: bool = True) -> list[dict[str, Any]]:
    """Run the unfinished units of `case` with `case.threads` torch threads; return one results row
    per unit (finished ones read back). `costs` (anything with a `phase(name)` context manager, e.g.
    `benchmarks.phase_costs.PhaseCosts`) brackets the phases fit, patch, predict, timing and rows;
    `shared_stages=False` computes every model's stages before the in-context blocks itself (the
    same numbers, bit for bit). Raises DatasetError / RunnerError for user-fixable problems before
    any unit file is written."""
    with torch_threads(case.threads):
        return _run_case(case, _Untimed() if costs is None else costs, shared_stages)


def _run_case(case: Case, costs: Any, shared_stages: bool) -> list[dict[str, Any]]:
    units = _units(case)
    reject_duplicates(key for _, (key, _) in units)
    store = UnitStore(case.runs_dir)
    done = {key: None if case.overwrite else store.finished(identity, key) for _, (key, identity) in units}
    todo = [(unit, key, identity) for unit, (key, identity) in units if done[key] is None]
    label = f"{case.host}/{case.dataset.name}/seed={case.seed}"
    if not todo:
        log.info("%s: all %d units finished, skipped (overwrite=true recomputes)", label, len(units))
        return list(done.values())
    with unit_bar(label, len(units), len(units) - len(todo)) as bar:  # closed (line cleared) before an error
        with costs.phase("fit"):
            table, data = case_split(case)
            fitted = FittedCase(case, table, data, *fit_split(case, data))
        log.info("%s: fitted on %d rows × %d features in %.1fs", label, *data.X_train.shape, fitted.fit_seconds)
        with costs.phase("patch"):
            # The reference is the frozen stock host (frozen weights may take other CPU kernels).
            models = {BASELINE: patch_variant(fitted.regressor, resolved_variant(BASELINE, {}))}
            patched = {key: unit.patch(fitted.regressor) for unit, key, _ in todo}
        models |= {key.label(): model for key, model in patched.items() if model.retrofit_report_.patched}
        with costs.phase("predict"):
            preds = predict_all(models, data.X_test, shared=shared_stages)
        with costs.phase("timing"):
            times, load = _timed(case, data, [(unit, key.label()) for unit, key, _ in todo if key.label() in models])
        with costs.phase("rows"):
            seconds = timing_columns(times, BASELINE)["predict_seconds"]
            common = case_columns(case.columns(), fitted, preds[BASELINE], seconds)
            baseline_scores = DistributionScores.of(data.y_test, preds[BASELINE].distribution)
            log.info("%s: baseline RMSE %.4g (%d test rows)", label, common["baseline_rmse"], len(data.y_test))
            for unit, key, identity in todo:
                name = key.label() if key.label() in models else BASELINE  # nothing patched: the baseline's bits
                if not np.isfinite(preds[name].mean).all():
                    raise FloatingPointError(f"{label}: variant {unit.variant!r} predicted non-finite values")
                timing = timing_columns(times, name, load) | (
                    {} if unit.timed else {"timing_rounds": 0, "timing_members": 0}
                )
                labels = {"variant": unit.variant, "arm": unit.arm, "arm_extra": unit.arm_extra}
                row = unit_row(common, labels, key, preds[name], baseline_scores, data.y_test, timing, patched[key])
                row["identity"] = identity
                store.write(identity, row)
                done[key] = row
                bar.update()
                log.info("%s: %s RMSE %.4g (Δ %+.3f%%)", label, unit.variant, row["rmse"], row["delta_rmse_pct"])
    return list(done.values())


def _timed(case: Case, data: Split, units: list[tuple[UnitSpec, str]]) -> tuple[dict[str, list[float]], float]:
    """Seconds per interleaved round of the baseline and of each timed unit (`units`: the unit and
    its model's name), on the case's timing regressor fitted on its split `data` (module
    docstring), and the load per core they ran under; ({}, NaN) when not timed."""
    units = [(unit, name) for unit, name in units if unit.timed]
    if not case.timing_rounds:
        return {}, float("nan")
    regressor, _ = fit_split(replace(case, n_estimators=case.timing_members), data)
    models = {BASELINE: patch_variant(regressor, resolved_variant(BASELINE, {}))}
    models |= {name: unit.patch(regressor) for unit, name in units}
    log.info("timing %d models, %d rounds, %d members", len(models), case.timing_rounds, case.timing_members)
    return time_all(models, data.X_test, case.timing_rounds), load_per_core()


# --- a unit's prediction, timing and row -------------------------------------------------------

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
    return {
        **common,
        **labels,
        "hparams": key.hparams,
        "rmse": variant_rmse,
        **matched_deltas({"rmse": variant_rmse, "baseline_rmse": common["baseline_rmse"]}),
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
    tau values themselves are taken at predict time (`predict`).
    """
    variant = patched.retrofit_report_.variant
    rule = variant.tau
    tau_rule = ""
    if rule is not None:
        tau_rule = f"c={rule.c:g} (calibrated)" if rule.mode == "calibrated" else f"{rule.value:g} (absolute)"
    tau_c = rule.c if rule is not None and rule.mode == "calibrated" else None
    return {"tau_rule": tau_rule, "tau_c": tau_c, "eps_den": variant.eps_den, "eps_mode": variant.eps_mode}
