"""One case: fit ONE regressor on one dataset × seed, then every requested variant on that fit.

Matched comparison: all units of a case share the split, the fitted preprocessing, the ensemble
members and the `random_state` (= the seed). The baseline, the frozen stock host
(`retrofit.retrofit(fitted, "baseline")`), predicts once per case; each variant is
`retrofit.retrofit(fitted, variant, **hparams)` on the same fit, and one that patches nothing
reuses the baseline's prediction. `run_case` skips the units the store holds under their
identity (`Case.identities`; unless `overwrite`: a case whose units are all finished loads no
data), predicts and times the rest (`retrofit.runner.predictions`) and stores their rows.

Timing (`Case.timing_rounds` rounds, 0 for none) runs on a regressor of its own: the case's split
and `random_state` fitted with `Case.timing_members` members (1 by default), the stock host and each
timed unit's variant on it, interleaved. The members are independent forwards of one network, so
the patched / stock ratio of one member is the ensemble's, at an eighth of the cost; no prediction
of the case comes from a timed call.
"""

import functools
import logging
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from tabpfn import TabPFNRegressor

import retrofit
from retrofit.data import DatasetSpec, Split
from retrofit.data.prepare import MAX_SEED
from retrofit.data.sources import rdatasets_index
from retrofit.errors import RunnerError
from retrofit.fitting import PRECISIONS, CaseSpec, case_data, fit_case, fit_split
from retrofit.hosts import check_checkpoint
from retrofit.hosts.device import device_label
from retrofit.hosts.regressor import MAX_MEMBERS
from retrofit.measure.timing import torch_threads
from retrofit.metrics import DistributionScores
from retrofit.results.record import hparams_text
from retrofit.runner import console
from retrofit.runner.predictions import (
    BASELINE,
    case_columns,
    load_per_core,
    predict_all,
    time_all,
    timing_columns,
    unit_row,
)
from retrofit.runner.store import UnitKey, UnitStore, digest, environment, file_digest, reject_duplicates
from retrofit.variants import Variant, resolve_variant

__all__ = ["BASELINE", "Case", "UnitSpec", "check_cases", "run_case", "stored_rows"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnitSpec:
    """A variant plus the hyper-parameter overrides passed to `retrofit.retrofit`.

    `variant` names a built-in variant, or, with `spec` (a full variant mapping, e.g. a file from a
    Hydra search path), labels that spec. `hparams`: keys of `retrofit.variants.HPARAMS`, e.g.
    `{"tau": {"mode": "calibrated", "c": 0.01}}`; they are part of the unit's key. `timed=False`
    leaves the unit out of the interleaved timing (one predict call, NaN times), as for the
    decomposition arms (`retrofit.runner.decomposition`), which also set `arm` (the arm this unit
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
        """The validated variant this unit runs."""
        return resolve_variant(self.variant if self.spec is None else self.spec, **self.hparams)

    def patch(self, regressor: TabPFNRegressor) -> TabPFNRegressor:
        """`retrofit.retrofit` of this unit's variant on the fitted `regressor`."""
        return retrofit.retrofit(regressor, self.variant if self.spec is None else self.spec, **self.hparams)


MAX_THREADS = 1_024
MAX_ROUNDS = 1_000
"""Bounds of the thread count and the timing rounds (beyond them, a run would not end)."""


@dataclass(frozen=True, kw_only=True)
class Case(CaseSpec):
    """Everything one case needs, built from a Hydra config by `retrofit.runner.config`: the fitted
    case it is (`retrofit.fitting.CaseSpec`, which it hands to the fit as itself) and its units.

    `runs_dir`: the unit store (a local cache); `device`: resolved ("cpu" or "cuda");
    `timing_rounds`: interleaved timing rounds per timed unit, 0 for none; `timing_members`: the
    ensemble members of the regressor the timing runs on (module docstring); `threads`: torch's
    CPU threads while the case runs (part of the identity: more threads may split sums
    differently, e.g. 4 move tiny_v3's wage predictions by ~1e-7 relative against 1 or 2).
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
        """The digest of the host file's bytes (`file_digest`), read once."""
        return file_digest(check_checkpoint(self.host_path))

    @functools.cached_property
    def data_digest(self) -> str:
        """The digest of what the dataset's rows are read from (`data_digest`), read once."""
        return data_digest(self.dataset, self.base_dir)

    def settings(self) -> dict[str, Any]:
        """Every setting of this case that changes a number: the host file's and the data's bytes,
        the dataset spec, the ensemble size, the split fraction, device, precision and thread count."""
        return {
            "host": self.host_digest,
            "data": self.data_digest,
            "dataset": self.dataset,
            "n_estimators": self.n_estimators,
            "test_size": self.test_size,
            "device": self.device,
            "precision": self.precision,
            "threads": self.threads,
        }

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
        """What `unit` of this case is called (`retrofit.runner.store.UnitKey`)."""
        return UnitKey(self.host, self.dataset.name, self.seed, unit.variant, hparams_text(unit.hparams))

    def identities(self) -> dict[UnitKey, str]:
        """Per unit, its identity: the digest of everything its numbers come from (`settings()`, the
        seed, the unit's key, the library versions and the code's meaning:
        `retrofit.runner.store.environment`, the resolved variant and, for a timed unit, the timing
        settings: times are shown only with the settings they were measured under). Its file in
        the store is named by it."""
        shared = {**self.settings(), **environment(), "seed": self.seed}
        timing = {unit.timed: self.timing if unit.timed else (0, 0) for unit in self.units}
        return {
            self.key(unit): digest(
                {**shared, "key": self.key(unit), "variant": unit.resolved(), "timing": timing[unit.timed]}
            )
            for unit in self.units
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def data_digest(spec: DatasetSpec, base_dir: Path) -> str:
    """What a dataset's rows are read from: a CSV file's or an rdatasets table's bytes
    (`file_digest`), or a loader's name and the version of the package that ships it (sklearn's
    bundled loaders, OpenML through sklearn). An edited file is another dataset."""
    if spec.source == "csv":
        path = Path(spec.options["path"]).expanduser()
        path = path if path.is_absolute() else Path(base_dir) / path
        if not path.is_file():
            raise RunnerError(
                f"dataset {spec.name!r}: CSV file {path} does not exist; fix `path` (in its YAML, or dataset.path=)"
            )
        return file_digest(path)
    if spec.source == "rdatasets":
        key = f"{spec.options['package']}/{spec.options['item']}"
        table = rdatasets_index().get(key)
        return file_digest(table) if table is not None else f"rdatasets:{key} (absent)"
    option = spec.options.get("loader", spec.options.get("id"))
    return f"{spec.source}:{option}@scikit-learn {version('scikit-learn')}"


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
        case_data(case)


def _units(case: Case) -> list[tuple[UnitSpec, tuple[UnitKey, str]]]:
    """Each unit of `case` with its key and identity."""
    return list(zip(case.units, case.identities().items(), strict=True))


def stored_rows(case: Case) -> dict[UnitKey, dict[str, Any] | None]:
    """Per unit of `case`, its stored row if the store holds its identity, else None."""
    store = UnitStore(case.runs_dir)
    return {key: store.finished(identity, key) for key, identity in case.identities().items()}


def reusable(cases: list[Case]) -> int:
    """How many units of `cases` the store already holds under their identity (none with `overwrite`)."""
    return sum(row is not None for case in cases if not case.overwrite for row in stored_rows(case).values())


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
    bar = console.unit_bar(label, len(units), len(units) - len(todo))
    with costs.phase("fit"):
        fitted = fit_case(case)
    data = fitted.data
    log.info("%s: fitted on %d rows × %d features in %.1fs", label, *data.X_train.shape, fitted.fit_seconds)
    with costs.phase("patch"):
        # The reference is the frozen stock host (frozen weights take other CPU kernels, ~1e-7).
        models = {BASELINE: retrofit.retrofit(fitted.regressor, BASELINE)}
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
    bar.close()
    return list(done.values())


def _timed(case: Case, data: Split, units: list[tuple[UnitSpec, str]]) -> tuple[dict[str, list[float]], float]:
    """Seconds per interleaved round of the baseline and of each timed unit (`units`: the unit and
    its model's name), on the case's timing regressor fitted on its split `data` (module
    docstring), and the load per core they ran under; ({}, NaN) when not timed."""
    units = [(unit, name) for unit, name in units if unit.timed]
    if not case.timing_rounds:
        return {}, float("nan")
    regressor, _ = fit_split(replace(case, n_estimators=case.timing_members), data)
    models = {BASELINE: retrofit.retrofit(regressor, BASELINE)}
    models |= {name: unit.patch(regressor) for unit, name in units}
    log.info("timing %d models, %d rounds, %d members", len(models), case.timing_rounds, case.timing_members)
    return time_all(models, data.X_test, case.timing_rounds), load_per_core()
