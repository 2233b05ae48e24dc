"""The runner: unit files (naming, atomic writes, resume, fingerprints, concurrent writers), matched
cases, interleaved timing, aggregation with the two-level bootstrap, the reproduction check."""

import json
import math
import re
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path
from subprocess import PIPE
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch
from omegaconf import OmegaConf

import retrofit
from retrofit import fitting
from retrofit.errors import RunnerError
from retrofit.io import write_atomic
from retrofit.metrics import BarPredictive
from retrofit.results import aggregate as agg
from retrofit.results.bootstrap import cluster_bootstrap_ci
from retrofit.results.compare import TOLERANCES, Reference, check, read_reference, require_covered, verify
from retrofit.results.record import hparams_text
from retrofit.runner import case as case_module
from retrofit.runner import predictions
from retrofit.runner import store as units_module
from retrofit.runner.case import UnitSpec, run_case
from retrofit.runner.sweep_config import check_seed_selections
from retrofit.runner.case import predict_all, time_all, timing_columns
from retrofit.runner.store import UnitKey, UnitStore, code_digest, reject_duplicates

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("case_worker.py")
"""Runs cases into one store in a process of its own."""
VARIANTS = ("baseline", "oa_only", "full_o")


@pytest.fixture
def case_on(make_case):
    """`make_case` with this file's defaults: carseats, baseline / oa_only / full_o, one member."""
    return partial(make_case, dataset="carseats", units=tuple(UnitSpec(v) for v in VARIANTS), n_estimators=1)


# --- unit files -------------------------------------------------------------------------------


def test_unit_key_names_what_ran():
    key = UnitKey("tiny_v3", "wage", 2, "oa_only", hparams_text({"tau": {"mode": "calibrated", "c": 0.01}}))
    assert key.label() == "host=tiny_v3/dataset=wage/seed=2/variant=oa_only/hparams=tau.c=0.01,tau.mode=calibrated"
    assert UnitKey("tiny_v3", "wage", 2, "baseline").label() == "host=tiny_v3/dataset=wage/seed=2/variant=baseline"


def test_duplicate_keys_are_rejected_by_name():
    a, b = UnitKey("h", "d", 0, "oa_only"), UnitKey("h", "d", 1, "oa_only")
    reject_duplicates([a, b])
    with pytest.raises(RunnerError, match=r"duplicate units in this sweep: host=h/dataset=d/seed=0/variant=oa_only;"):
        reject_duplicates([a, b, a])


def test_store_reads_back_a_unit_only_under_its_identity(tmp_path):
    store = UnitStore(tmp_path, columns=("rmse",))
    path = store.write("abc", {"rmse": 1.0})
    assert path == tmp_path / "abc.json" and store.finished("abc")["rmse"] == 1.0
    assert store.finished("changed") is None
    path.rename(tmp_path / "other.json")  # a file under another identity's name is not that unit
    assert store.finished("other") is None


def test_atomic_write_leaves_nothing_when_interrupted(tmp_path):
    def crash(tmp):
        tmp.write_text("half a row")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "unit.json", crash)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_unit_file_is_named(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RunnerError, match=r"bad\.json is not valid JSON"):
        UnitStore(tmp_path).read(tmp_path / "bad.json")


def test_code_digest_follows_what_the_code_does_not_what_it_says(tmp_path):
    """A comment or docstring edit keeps every cached unit, as does a change of how results are
    shown; a change of the code that computes numbers makes them stale."""
    package = tmp_path / "retrofit"
    shutil.copytree(ROOT / "retrofit" / "runner", package / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    path = package / "runner" / "case.py"
    source = path.read_text()

    def digest_of(text: str) -> str:
        path.write_text(text)
        code_digest.cache_clear()
        return code_digest(package)

    before = digest_of(source)
    said = source.replace('"""One case: fit ONE regressor', '"""One case (reworded): fit ONE regressor', 1)
    said = said.replace("    def settings(self)", "    # a comment\n    def settings(self)", 1)
    assert said != source and digest_of(said) == before
    done = source.replace('"threads": self.threads,', '"threads": self.threads + 1,', 1)
    changed = digest_of(done)
    assert done != source and changed != before
    (package / "notes.txt").write_text("not source")
    shown = package / "runner" / "console.py"
    shown.write_text(shown.read_text() + "\nSHOWN_ONLY = 1\n")  # how results are shown: no number changes
    assert digest_of(done) == changed  # only the source of what computes numbers counts
    code_digest.cache_clear()


# --- matched cases on a tiny random host ------------------------------------------------------


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


def unit_files(runs_dir: Path) -> list[Path]:
    return sorted(runs_dir.rglob("*.json"))


def test_case_writes_one_file_per_variant_with_all_columns(host, tmp_path, case_on):
    rows = run_case(case_on(host, tmp_path))
    assert [p.name for p in unit_files(tmp_path)] == sorted(f"{row['identity']}.json" for row in rows)
    for row in rows:
        assert set(agg.COLUMNS) <= set(row)
        assert (row["n_train"], row["n_test"], row["n_features"], row["device"]) == (280, 120, 10, "cpu")
        assert row["baseline_rmse"] > 0
        assert np.isnan([row["predict_seconds"], row["predict_time_ratio"], row["predict_time_ratio_max"]]).all()
    baseline = rows[0]
    assert baseline["variant"] == "baseline" and baseline["rmse"] == baseline["baseline_rmse"]
    assert (baseline["delta_rmse_pct"], baseline["tau_rule"], baseline["eps_den"]) == (0.0, "", None)
    assert np.isnan(baseline["tau"])  # nothing patched: no tau
    assert rows[1]["tau_rule"] == "c=0.001 (calibrated)" and rows[1]["eps_den"] == 1e-6
    assert np.isfinite(rows[1]["tau"]) and rows[1]["tau"] > 0  # c · median ||h||², taken at predict time


def test_an_absolute_tau_is_recorded_as_the_value_used(host, tmp_path, case_on):
    units = (UnitSpec("baseline"), UnitSpec("oa_only", {"tau": {"mode": "absolute", "value": 0.25}}))
    row = run_case(case_on(host, tmp_path, units=units))[1]
    assert (row["tau"], row["tau_rule"], row["tau_c"]) == (0.25, "0.25 (absolute)", None)


def test_timed_case_records_median_times_and_paired_ratios(host, tmp_path, case_on):
    untimed = run_case(case_on(host, tmp_path / "a"))
    timed = run_case(case_on(host, tmp_path / "b", timing_rounds=3))
    assert [r["rmse"] for r in timed] == [r["rmse"] for r in untimed]  # timing never changes a number
    baseline, *variants = timed
    assert (baseline["predict_time_ratio"], baseline["predict_time_ratio_min"]) == (1.0, 1.0)
    assert baseline["predict_seconds"] == baseline["baseline_predict_seconds"] > 0
    for row in variants:
        assert 0 < row["predict_time_ratio_min"] <= row["predict_time_ratio"] <= row["predict_time_ratio_max"]


def test_the_timing_runs_on_its_own_regressor_with_timing_members(host, tmp_path, case_on, monkeypatch):
    """The timed calls are of regressors fitted on the case's split with `timing_members` members
    (the stock host and each timed unit's variant on it), never of the case's own regressor; the
    untimed arm is not timed; every unit's prediction is the one an untimed case gives."""
    timed_models: list[dict] = []

    def recorded(models, X, rounds):
        timed_models.append(dict(models))
        return real(models, X, rounds)

    real = case_module.time_all
    monkeypatch.setattr(case_module, "time_all", recorded)
    units = (UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("full_o", timed=False))
    case = case_on(host, tmp_path / "b", units=units, timing_rounds=2, timing_members=2)
    rows = run_case(case)
    (models,) = timed_models
    (stock, stock_model), (oa_only, oa_model) = models.items()
    assert stock == "baseline" and "variant=oa_only" in oa_only
    assert stock_model.n_estimators == oa_model.n_estimators == 2 and case.n_estimators != 2
    assert not stock_model.retrofit_report_.patched and oa_model.retrofit_report_.patched
    assert np.isnan(rows[2]["predict_time_ratio"]) and np.isfinite(rows[1]["predict_time_ratio"])
    untimed = run_case(case_on(host, tmp_path / "a", units=units))
    assert [r["rmse"] for r in rows] == [r["rmse"] for r in untimed]


class CountingModel:
    """A stand-in regressor on the CPU: counts its calls, records the call order, predicts `value`."""

    devices_ = ("cpu",)

    def __init__(self, name: str, value: float, order: list[str]):
        self.name, self.value, self.order = name, value, order

    def predict(self, X):
        self.order.append(self.name)
        return np.full(len(X), self.value)


class DriftingModel(CountingModel):
    """A stand-in whose every call predicts a little more than the last (a non-deterministic host)."""

    def predict(self, X):
        self.order.append(self.name)
        return np.full(len(X), self.value + 1e-12 * len(self.order))


def _counted_predict(model, X, stages=None):
    """`predictions.predict` on a stand-in model: its values as the mean, one fixed two-bucket
    distribution per row, no tau."""
    bars = BarPredictive(np.zeros((len(X), 2)), np.array([0.0, 1.0, 2.0]))
    return predictions.Prediction(model.predict(X), bars, math.nan)


def test_predict_all_predicts_once_each_and_time_all_in_rotated_rounds(monkeypatch):
    """Every model predicts once, in the models' order; the timed ones then predict `rounds` times
    each, the order rotating every round, and no timing call is made with 0 rounds."""
    monkeypatch.setattr(predictions, "predict", _counted_predict)
    order: list[str] = []
    models = {name: CountingModel(name, v, order) for name, v in (("baseline", 1.0), ("a", 2.0), ("b", 3.0))}
    preds = predict_all(models, np.zeros((4, 2)))
    assert order == ["baseline", "a", "b"] and list(preds) == list(models)
    assert {k: v.mean[0] for k, v in preds.items()} == {"baseline": 1.0, "a": 2.0, "b": 3.0}
    order.clear()
    times = time_all(models, np.zeros((4, 2)), rounds=3)
    assert order == ["baseline", "a", "b", "a", "b", "baseline", "b", "baseline", "a"]
    assert {k: len(v) for k, v in times.items()} == {"baseline": 3, "a": 3, "b": 3}
    assert all(t >= 0 for ts in times.values() for t in ts)
    order.clear()
    assert time_all(models, np.zeros((4, 2)), rounds=0) == {"baseline": [], "a": [], "b": []} and order == []


def test_prediction_same_as_compares_mean_distribution_and_tau():
    bars = BarPredictive(np.zeros((2, 2)), np.array([0.0, 1.0, 2.0]))
    a = predictions.Prediction(np.array([1.0, 2.0]), bars, math.nan)
    assert a.same_as(a._replace(mean=a.mean.copy())) and a.same_as(a)  # NaN tau equals NaN tau
    other_bars = BarPredictive(np.array([[0.0, 0.0], [0.0, 1e-9]]), bars.borders_B)
    for changed in (
        a._replace(mean=np.array([1.0, 2.0 + 1e-12])),
        a._replace(distribution=other_bars),
        a._replace(tau=0.5),
    ):
        assert not a.same_as(changed) and not changed.same_as(a)


def test_time_all_refuses_a_model_whose_calls_disagree(monkeypatch):
    """A model that predicts otherwise on every call cannot be compared matched: timing it fails,
    naming it; one call (its prediction) has nothing to disagree with."""
    monkeypatch.setattr(predictions, "predict", _counted_predict)
    models = {"baseline": CountingModel("baseline", 1.0, []), "a": DriftingModel("a", 2.0, [])}
    with pytest.raises(RunnerError, match=r"a: its 2 timed predict calls returned different predictions"):
        time_all(models, np.zeros((4, 2)), rounds=2)
    assert predict_all(models, np.zeros((4, 2)))["a"].mean[0] > 2.0


def test_timing_columns_are_median_and_range_of_per_round_ratios():
    times = {"baseline": [1.0, 2.0, 4.0], "a": [1.5, 2.0, 2.0]}
    columns = timing_columns(times, "a", load=0.25)
    assert columns == {
        "load": 0.25,
        "predict_seconds": 2.0,
        "predict_time_ratio": 1.0,
        "predict_time_ratio_min": 0.5,
        "predict_time_ratio_max": 1.5,
    }


def test_a_case_runs_with_its_thread_count_and_restores_it(host, tmp_path, monkeypatch, case_on):
    seen = []
    fit = case_module.fit_case
    monkeypatch.setattr(case_module, "fit_case", lambda *a: seen.append(torch.get_num_threads()) or fit(*a))
    before = torch.get_num_threads()
    run_case(case_on(host, tmp_path, units=(UnitSpec("baseline"),), threads=3))
    assert seen == [3] and torch.get_num_threads() == before


def test_variants_share_one_fit(host, tmp_path, monkeypatch, case_on):
    fits = []
    make = fitting.make_regressor

    def counting(*args, **kwargs):
        regressor = make(*args, **kwargs)
        fits.append(regressor)
        return regressor

    monkeypatch.setattr(fitting, "make_regressor", counting)
    rows = run_case(case_on(host, tmp_path))
    assert len(fits) == 1 and len({r["baseline_rmse"] for r in rows}) == 1


def test_rerun_skips_finished_units_and_overwrite_recomputes(host, tmp_path, monkeypatch, case_on):
    first = run_case(case_on(host, tmp_path))
    stamps = {p: p.stat().st_mtime_ns for p in unit_files(tmp_path)}

    def no_fit(*args, **kwargs):
        raise AssertionError("a finished case must not fit again")

    monkeypatch.setattr(fitting, "make_regressor", no_fit)
    same = json.dumps(run_case(case_on(host, tmp_path)), sort_keys=True, default=str)  # NaN-safe equality
    assert same == json.dumps(first, sort_keys=True, default=str)
    assert {p: p.stat().st_mtime_ns for p in unit_files(tmp_path)} == stamps
    monkeypatch.undo()
    run_case(case_on(host, tmp_path, overwrite=True))
    assert all(p.stat().st_mtime_ns != stamps[p] for p in unit_files(tmp_path))


@pytest.mark.parametrize(
    "change",
    [
        {"environment": {"code": "another"}},
        {"environment": {"tabpfn": "0.0"}},
        {"environment": {"torch": "0.0"}},
    ],
    ids=["code", "tabpfn-version", "torch-version"],
)
def test_a_changed_version_or_code_makes_a_unit_stale(host, tmp_path, monkeypatch, change, case_on):
    run_case(case_on(host, tmp_path, units=(UnitSpec("oa_only"),)))
    (path,) = unit_files(tmp_path)
    before = json.loads(path.read_text())
    env = units_module.environment() | change["environment"]
    monkeypatch.setattr(case_module, "environment", lambda: env)
    (after,) = run_case(case_on(host, tmp_path, units=(UnitSpec("oa_only"),)))
    assert before["identity"] != after["identity"] and json.loads(path.read_text()) == before  # recomputed beside
    assert len(unit_files(tmp_path)) == 2 and after["rmse"] > 0


@pytest.mark.parametrize(
    "change",
    [{"n_estimators": 2}, {"precision": "float64"}, {"threads": 2}, {"test_size": 0.4}],
    ids=["n_estimators", "precision", "threads", "test_size"],
)
def test_a_changed_setting_is_another_unit_beside_the_first(host, tmp_path, change, case_on):
    run_case(case_on(host, tmp_path, units=(UnitSpec("oa_only"),)))
    (path,) = unit_files(tmp_path)
    before = path.read_text()
    run_case(case_on(host, tmp_path, units=(UnitSpec("oa_only"),), **change))
    first, second = (json.loads(p.read_text()) for p in unit_files(tmp_path))
    assert path.read_text() == before and first["identity"] != second["identity"]


def test_interrupted_case_loses_nothing_and_duplicates_nothing(host, tmp_path, monkeypatch, case_on):
    write = UnitStore.write

    def crash_on_full_o(store, identity, row):
        if row["variant"] == "full_o":
            raise KeyboardInterrupt
        return write(store, identity, row)

    monkeypatch.setattr(UnitStore, "write", crash_on_full_o)
    with pytest.raises(KeyboardInterrupt):
        run_case(case_on(host, tmp_path, units=(UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("full_o"))))
    assert sorted(json.loads(p.read_text())["variant"] for p in unit_files(tmp_path)) == ["baseline", "oa_only"]
    kept = {p: p.read_text() for p in unit_files(tmp_path)}
    monkeypatch.undo()
    run_case(case_on(host, tmp_path))
    assert len(unit_files(tmp_path)) == 3 and all(p.read_text() == text for p, text in kept.items())
    assert not list(tmp_path.rglob("*.tmp"))


def test_unknown_hparam_and_missing_host_are_user_errors(tmp_path, host, case_on):
    from retrofit.runner.sweep_config import unit_spec

    with pytest.raises(RunnerError, match="unknown retrofit hyper-parameters"):
        unit_spec("oa_only", retrofit.variants.load_variant("oa_only"), {"temperature": 2})
    with pytest.raises(retrofit.errors.RetrofitError):
        run_case(case_on(tmp_path / "missing.safetensors", tmp_path))
    assert unit_files(tmp_path) == []


@pytest.mark.slow
def test_two_concurrent_sweeps_on_one_store_lose_nothing(host, tmp_path):
    """Two processes run overlapping cases into one store at once: every unit ends up whole, once."""
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), str(host), str(tmp_path), datasets, "0", "1"], stderr=PIPE)
        for datasets in ("diabetes,carseats", "carseats,diabetes")
    ]
    errors = [p.communicate(timeout=600)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    store = UnitStore(tmp_path)
    rows = [store.read(path) for path in tmp_path.rglob("*.json")]
    assert sorted((r["dataset"], r["variant"]) for r in rows) == [
        ("carseats", "baseline"),
        ("carseats", "oa_only"),
        ("diabetes", "baseline"),
        ("diabetes", "oa_only"),
    ]
    assert not list(tmp_path.rglob("*.tmp"))


# --- aggregation ------------------------------------------------------------------------------


def synthetic_rows() -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for dataset in ("a", "b"):
        for seed in range(3):
            for variant, shift in (("baseline", 0.0), ("oa_only", 0.1), ("full_o", 0.2)):
                base = variant == "baseline"
                delta = 0.0 if base else shift + rng.normal(0, 0.05)
                ratio = 1.0 if base else 1.2 + 0.1 * seed
                rows.append(
                    dict(
                        dataset=dataset,
                        seed=seed,
                        variant=variant,
                        host="h",
                        device="cpu",
                        n_train=70,
                        n_test=30,
                        n_features=4,
                        rmse=1 + delta / 100,
                        baseline_rmse=1.0,
                        delta_rmse_pct=delta,
                        nll=1.0 + delta / 100,
                        baseline_nll=1.0,
                        delta_nll=delta / 100,
                        crps=0.5,
                        baseline_crps=0.5,
                        delta_crps_pct=0.0,
                        coverage_90=0.9,
                        baseline_coverage_90=0.9,
                        delta_coverage_90=0.0,
                        tau=np.nan if base else 150.0,
                        tau_rule="" if base else "c=0.001 (calibrated)",
                        tau_c=None if base else 0.001,
                        eps_den=None if base else 1e-6,
                        eps_mode=None if base else "absolute",
                        predict_seconds=1.1,
                        baseline_predict_seconds=1.0,
                        predict_time_ratio=ratio if seed < 2 else np.nan,
                        predict_time_ratio_min=ratio,
                        predict_time_ratio_max=ratio,
                        fit_seconds=0.1,
                        n_categorical=0,
                        n_missing_target=0,
                        n_estimators=1,
                        hparams={},
                    )
                )
    return rows


def test_aggregate_writes_csv_table_and_plot(tmp_path):
    frame = agg.aggregate(tmp_path, synthetic_rows())
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert len(csv) == 18 and list(csv.columns) == agg.COLUMNS
    assert frame[["dataset", "seed", "variant"]].duplicated().sum() == 0
    table = (tmp_path / "retrofit_table.md").read_text()
    assert "6 host × dataset × seed cases" in table and re.search(r"\|\s*h\s*\|\s*a\s*\|", table)
    assert re.search(r"\|\s*h\s*\|\s*oa_only\s*\|\s*6\s*\|.*\|\s*6 / 0\s*\|", table)  # all six cases above zero
    assert "1.25× [1.20, 1.30] (n=4)" in table  # median of the timed units' ratios, their range, count
    assert (tmp_path / "retrofit_deltas.png").read_bytes()[:4] == b"\x89PNG"


def test_a_variant_not_run_on_a_dataset_is_named_so_in_the_table():
    rows = [r for r in synthetic_rows() if not (r["dataset"] == "b" and r["variant"] == "full_o")]
    table = agg.per_dataset(agg.frame_of(rows)).set_index("dataset")
    assert table.loc["b", "full_o"] == "not run" and table.loc["a", "full_o"].startswith("+")


def test_cluster_bootstrap_of_identical_datasets_has_zero_width():
    assert cluster_bootstrap_ci([[0.3, 0.3, 0.3]] * 6) == (0.3, 0.3)
    assert np.isnan(cluster_bootstrap_ci([[0.3]])).all()


def test_cluster_bootstrap_resamples_datasets_then_seeds():
    means = np.random.default_rng(1).normal(0.1, 0.05, 6)
    # Seeds that agree within a dataset: the CI is the one-level bootstrap of the dataset means.
    low, high = cluster_bootstrap_ci([[m] * 3 for m in means])
    ref = scipy.stats.bootstrap((means,), np.mean, method="percentile", n_resamples=10_000, random_state=0)
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.005)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.005)
    # Two identical datasets: the spread comes from the seeds alone (mean of 6 draws of {0.1, 0.2, 0.3}).
    assert cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2) == pytest.approx((0.1333, 0.2667), abs=1e-3)
    assert cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2, seed=0) == cluster_bootstrap_ci([[0.1, 0.2, 0.3]] * 2, seed=0)


# --- the reproduction check -------------------------------------------------------------------


def reference_csv(tmp_path: Path) -> pd.DataFrame:
    agg.aggregate(tmp_path, synthetic_rows(), table=False)
    return pd.read_csv(tmp_path / "retrofit_rmse.csv")


def test_an_unaltered_reference_reproduces(tmp_path):
    frame = reference_csv(tmp_path)
    outcome = verify(tmp_path, frame)
    assert outcome.ok and outcome.line().startswith(
        f"reproduced: 18/18 rows within {TOLERANCES.rel:g} (max rel |Δ| 0, 22 columns) vs a table in memory;"
    )
    assert (
        (tmp_path / "reproduction.txt").read_text().startswith(outcome.line() + "\n\n## Largest difference per column")
    )


def test_an_altered_reference_row_is_caught(tmp_path):
    frame = reference_csv(tmp_path)
    altered = frame.copy()
    altered.loc[4, "rmse"] *= 1 + 1e-4
    with pytest.raises(
        RunnerError, match=r"not reproduced \(reproduced: 17/18 rows within 1e-05 \(max rel \|Δ\| 0.0001 in rmse, 22"
    ):
        verify(tmp_path, altered)
    assert "1 differing: host=h/dataset=a/seed=1/variant=full_o (rmse)" in (tmp_path / "reproduction.txt").read_text()
    assert check(frame, frame.assign(rmse=frame["rmse"] * (1 + TOLERANCES.rel / 2))).ok


def test_missing_and_extra_rows_are_caught(tmp_path):
    frame = reference_csv(tmp_path)
    outcome = check(frame.iloc[1:], frame.iloc[:-1])
    assert not outcome.ok and (outcome.within, outcome.compared) == (16, 16)
    assert len(outcome.missing) == 1 and len(outcome.extra) == 1 and "1 extra" in outcome.line()
    assert "subset: 16 of the reference's 17 rows ran" in outcome.line()
    with pytest.raises(RunnerError, match="does not exist"):
        read_reference(tmp_path / "none.csv")


def test_a_grid_changed_on_purpose_compares_the_shared_rows_and_lists_the_rest(tmp_path):
    """grid_changed: new and dropped rows are listed, not failed; the shared rows must still
    reproduce; a record sweep may then drop rows; a 'changed' grid that runs the reference's rows
    exactly is refused before it runs."""
    frame = reference_csv(tmp_path)
    changed = Reference(frame.iloc[:-2], "the old grid", require_all=True, grid_changed=True)
    outcome = check(frame.iloc[1:], changed)
    assert outcome.ok and (outcome.within, outcome.compared) == (15, 15)
    labels = [f"host={r.host}/dataset={r.dataset}/seed={r.seed}/variant={r.variant}" for r in frame.itertuples()]
    assert f"; grid changed: 2 new: {labels[-2]}, {labels[-1]}; 1 dropped: {labels[0]}" in outcome.line()
    altered = frame.assign(rmse=frame["rmse"] * (1 + 1e-3))
    assert not check(altered.iloc[1:], changed).ok  # a shared row that moved still fails
    assert not check(frame.iloc[1:], Reference(frame.iloc[:-2], "the old grid", require_all=True)).ok
    keys = [UnitKey("h", str(r.dataset), int(r.seed), str(r.variant)) for r in frame.itertuples()]
    require_covered(changed, keys[1:])  # rows dropped on purpose: allowed before the sweep runs
    with pytest.raises(RunnerError, match="grid_changed=true, but this sweep runs exactly the 16 rows"):
        require_covered(changed, keys[:-2])


def test_the_reference_is_the_named_file_or_its_committed_version(tmp_path):
    """A commit reads the CSV as committed there, not one a failed run overwrote; without one, the
    working tree; outside git, the file as it is. The source says which."""
    csv = tmp_path / "retrofit_rmse.csv"
    frame = reference_csv(tmp_path)
    outside = read_reference(csv, "HEAD")  # not in a git checkout
    assert outside.frame.equals(frame) and outside.source.endswith("(working tree: not a git checkout, no HEAD)")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", csv.name], ["commit", "-q", "-m", "reference"]):
        subprocess.run([*git, *args], check=True)
    frame.assign(rmse=frame["rmse"] * 2).to_csv(csv, index=False)  # a later run overwrote it
    committed = read_reference(csv, "HEAD")
    assert committed.frame["rmse"].tolist() == frame["rmse"].tolist()
    assert re.fullmatch(rf"{re.escape(str(csv.resolve()))} at HEAD \([0-9a-f]{{7,}}\)", committed.source)
    assert read_reference(csv).frame["rmse"].tolist() == (frame["rmse"] * 2).tolist()
    assert read_reference(csv).source == f"{csv.resolve()} (working tree)"
    with pytest.raises(RunnerError, match="reference_commit=null"):
        read_reference(tmp_path / "untracked.csv", "HEAD")


def test_seed_lists_that_select_no_case_of_a_sweep_are_refused():
    """timing.seeds and decomposition.seeds take effect on at least one job of the sweep, or the
    sweep is refused naming the key and the seeds it runs."""

    def jobs(timing_seeds, arm_seeds, rounds=3):
        node = {"timing": {"rounds": rounds, "seeds": timing_seeds}, "decomposition": {"seeds": arm_seeds}}
        return [(OmegaConf.create(node), SimpleNamespace(seed=seed)) for seed in (1, 2)]

    check_seed_selections(jobs(None, None))
    check_seed_selections(jobs([2], [1, 5]))
    check_seed_selections(jobs([0], None, rounds=0))  # not timed at all: the list is not used
    with pytest.raises(RunnerError, match=r"timing.seeds=\[0\] selects no case of this sweep \(its seeds: \[1, 2\]\)"):
        check_seed_selections(jobs([0], None))
    with pytest.raises(RunnerError, match=r"decomposition.seeds=\[\] selects no case"):
        check_seed_selections(jobs(None, []))
