"""One case (`retrofit.runner.case`): one fit shared by every unit, resume and overwrite, a unit's
identity covering every setting and input that changes a number, and refusals before any unit file."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from synthetic import CASE_VARIANTS

import retrofit
from retrofit import fitting
from retrofit.data import DatasetSpec
from retrofit.errors import RunnerError
from retrofit.results import run_files as agg
from retrofit.runner import case as case_module
from retrofit.runner import identity
from retrofit.runner.case import UnitSpec, check_cases, reject_duplicates, run_case
from retrofit.runner.store import UnitStore
from retrofit.unit_key import UnitKey


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


def test_a_case_runs_with_its_thread_count_and_restores_it(host, tmp_path, monkeypatch, case_on):
    seen = []
    fit = case_module.fit_split
    monkeypatch.setattr(case_module, "fit_split", lambda *a: seen.append(torch.get_num_threads()) or fit(*a))
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
    env = identity.environment() | change["environment"]
    monkeypatch.setattr(identity, "environment", lambda: env)
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


def test_a_case_that_fails_clears_its_progress_bar_before_the_error_is_said(host, tmp_path, monkeypatch, case_on):
    """The bar was left open on a refusal, so its error was printed on the bar's line."""
    bars, unit_bar = [], case_module.unit_bar

    def recorded(*args, **kwargs):
        bars.append(unit_bar(*args, **kwargs))
        return bars[-1]

    monkeypatch.setattr(case_module, "unit_bar", recorded)
    monkeypatch.setattr(case_module, "case_split", lambda case: (_ for _ in ()).throw(RunnerError("refused")))
    with pytest.raises(RunnerError, match=r"^refused$"):
        run_case(case_on(host, tmp_path))
    assert len(bars) == 1 and bars[0].disable  # tqdm marks a closed bar disabled


def test_unknown_hparam_and_missing_host_are_user_errors(tmp_path, host, case_on):
    from retrofit.runner.sweep_config import unit_spec

    with pytest.raises(RunnerError, match="unknown retrofit hyper-parameters"):
        unit_spec("oa_only", retrofit.variants.load_variant("oa_only"), {"temperature": 2})
    with pytest.raises(retrofit.errors.RetrofitError):
        run_case(case_on(tmp_path / "missing.safetensors", tmp_path))
    assert unit_files(tmp_path) == []


@pytest.mark.parametrize(
    "change",
    [{"n_estimators": 2}, {"test_size": 0.4}, {"precision": "float64"}, {"threads": 2}, {"device": "cuda"}],
    ids=["n_estimators", "test_size", "precision", "threads", "device"],
)
def test_every_setting_that_changes_a_number_is_part_of_the_unit_identity(host, tmp_path, change, diabetes_case):
    units = (UnitSpec("oa_only"),)
    (first,), (other,) = (
        case.identities.items()
        for case in (diabetes_case(host, tmp_path, units=units), diabetes_case(host, tmp_path, units=units, **change))
    )
    assert first[0] == other[0] and first[1] != other[1]  # one name, two identities


def test_another_host_file_or_dataset_spec_under_the_same_name_is_another_unit(
    make_random_host, host, tmp_path, diabetes_case, dataset_spec
):
    units = (UnitSpec("oa_only"),)
    base = diabetes_case(host, tmp_path, units=units)
    other_host = diabetes_case(make_random_host("tabpfn_v3", seed=1), tmp_path, units=units)
    other_spec = diabetes_case(host, tmp_path, units=units, dataset=replace(dataset_spec("diabetes"), max_rows=50))
    identities = {identity for case in (base, other_host, other_spec) for identity in case.identities.values()}
    assert len(identities) == 3


def test_duplicate_keys_are_rejected_by_name():
    a, b = UnitKey("h", "d", 0, "oa_only"), UnitKey("h", "d", 1, "oa_only")
    reject_duplicates([a, b])
    with pytest.raises(RunnerError, match=r"duplicate units in this sweep: host=h/dataset=d/seed=0/variant=oa_only;"):
        reject_duplicates([a, b, a])


def test_two_datasets_under_one_name_in_one_sweep_are_refused(host, tmp_path, diabetes_case, dataset_spec):
    spec = dataset_spec("diabetes")
    cases = [
        diabetes_case(host, tmp_path, dataset=spec),
        diabetes_case(host, tmp_path, dataset=replace(spec, max_rows=50)),
    ]
    with pytest.raises(RunnerError, match=r"two datasets of this sweep are named 'diabetes' .*give each its own name"):
        check_cases(cases)


def test_an_edited_csv_dataset_is_another_unit_recomputed(host, tmp_path, diabetes_case):
    table = pd.DataFrame({"x1": np.linspace(0, 1, 80), "x2": np.cos(np.arange(80)), "y": np.sin(np.arange(80))})
    table.to_csv(tmp_path / "mine.csv", index=False)
    raw = {"name": "mine", "source": "csv", "target": "y", "path": str(tmp_path / "mine.csv")}
    spec = DatasetSpec.from_mapping(raw)
    first = run_case(diabetes_case(host, tmp_path / "runs", dataset=spec))
    table.assign(y=table["y"] * 10 + 100).to_csv(tmp_path / "mine.csv", index=False)
    edited = run_case(diabetes_case(host, tmp_path / "runs", dataset=spec))
    assert edited[0]["baseline_rmse"] > 5 * first[0]["baseline_rmse"]
    assert edited[0]["data_digest"] != first[0]["data_digest"]
    assert len(list((tmp_path / "runs").rglob("*.json"))) == 4  # both kept, each under its own identity


def test_a_case_split_is_made_once_per_process_and_each_variant_resolved_once(host, tmp_path, monkeypatch, case_on):
    """The sweep's check and the job that runs the case (here an equal case built again, as a job in
    the sweep's process builds it) share one split; every unit's variant is resolved once, and its
    patch takes the resolved variant as it is."""
    loads, resolved = [], []
    load, resolve = fitting.load_table, case_module.resolve_variant
    monkeypatch.setattr(fitting, "load_table", lambda *a: loads.append(a) or load(*a))
    monkeypatch.setattr(case_module, "resolve_variant", lambda *a, **k: resolved.append(a) or resolve(*a, **k))
    monkeypatch.setattr(case_module, "_SPLITS", {})
    case_module._resolved.cache_clear()
    check_cases([case_on(host, tmp_path, seed=5)])
    rows = run_case(case_on(host, tmp_path, seed=5))
    assert len(loads) == 1 and len(rows) == len(CASE_VARIANTS)
    assert sorted(name for name, *_ in resolved) == sorted(CASE_VARIANTS)  # the baseline's model and unit share one
    other = case_on(host, tmp_path, seed=6)
    check_cases([other])
    assert len(loads) == 2 and case_module.case_split(other) is case_module.case_split(other)
