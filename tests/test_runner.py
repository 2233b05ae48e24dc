"""The runner: unit files (naming, atomic writes, resume, duplicates), matched cases, aggregation."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import retrofit
from retrofit.data import DatasetSpec
from retrofit.runner import aggregate as agg
from retrofit.runner import case as case_module
from retrofit.runner.case import Case, UnitSpec, run_case
from retrofit.errors import RunnerError
from retrofit.io import write_atomic
from retrofit.runner.units import UnitKey, UnitStore, hparams_key, reject_duplicates

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
VARIANTS = ("baseline", "oa_only", "full_o")


def make_case(host: Path, results_dir: Path, dataset: str = "carseats", seed: int = 0, **kwargs) -> Case:
    spec = DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{dataset}.yaml").read_text()))
    settings = dict(units=tuple(UnitSpec(v) for v in VARIANTS), n_estimators=1) | kwargs
    return Case(spec, seed, "random_v3", host, results_dir=results_dir, base_dir=Path("."), **settings)


# --- unit files -------------------------------------------------------------------------------


def test_unit_path_names_what_ran():
    key = UnitKey("tiny_v3", "wage", 2, "oa_only", hparams_key({"tau": {"mode": "calibrated", "c": 0.01}}))
    assert key.relpath() == Path("host=tiny_v3/dataset=wage/seed=2/variant=oa_only,tau.c=0.01,tau.mode=calibrated.json")
    assert UnitKey("tiny_v3", "wage", 2, "baseline").relpath().name == "variant=baseline.json"


def test_duplicate_keys_are_rejected_by_name():
    a, b = UnitKey("h", "d", 0, "oa_only"), UnitKey("h", "d", 1, "oa_only")
    reject_duplicates([a, b])
    with pytest.raises(RunnerError, match=r"duplicate units in this sweep: host=h/dataset=d/seed=0/variant=oa_only.json"):
        reject_duplicates([a, b, a])


def test_store_reads_back_only_matching_fingerprints(tmp_path):
    store, key = UnitStore(tmp_path), UnitKey("h", "d", 0, "v")
    store.write(key, {"rmse": 1.0, "fingerprint": "abc"})
    assert store.finished(key, "abc")["rmse"] == 1.0
    assert store.finished(key, "changed") is None
    assert store.finished(UnitKey("h", "d", 1, "v"), "abc") is None


def test_atomic_write_leaves_nothing_when_interrupted(tmp_path):
    def crash(tmp):
        tmp.write_text("half a row")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "unit.json", crash)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_unit_file_is_named(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RunnerError, match="bad.json is not valid JSON"):
        UnitStore(tmp_path).rows()


# --- matched cases on a tiny random host ------------------------------------------------------


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


def unit_files(results_dir: Path) -> list[Path]:
    return sorted((results_dir / "runs").rglob("*.json"))


def test_case_writes_one_file_per_variant_with_all_columns(host, tmp_path):
    rows = run_case(make_case(host, tmp_path))
    assert [p.name for p in unit_files(tmp_path)] == ["variant=baseline.json", "variant=full_o.json", "variant=oa_only.json"]
    for row in rows:
        assert set(agg.COLUMNS) <= set(row)
        assert (row["n_train"], row["n_test"], row["n_features"]) == (280, 120, 10)
        assert row["baseline_rmse"] > 0
    baseline = rows[0]
    assert baseline["variant"] == "baseline" and baseline["rmse"] == baseline["baseline_rmse"]
    assert (baseline["delta_rmse_pct"], baseline["tau"], baseline["eps_den"]) == (0.0, "", None)
    assert rows[1]["tau"] == "c=0.001 (calibrated)" and rows[1]["eps_den"] == 1e-6


def test_variants_share_one_fit(host, tmp_path, monkeypatch):
    fits = []
    make = case_module.make_regressor

    def counting(*args, **kwargs):
        regressor = make(*args, **kwargs)
        fits.append(regressor)
        return regressor

    monkeypatch.setattr(case_module, "make_regressor", counting)
    rows = run_case(make_case(host, tmp_path))
    assert len(fits) == 1 and len({r["baseline_rmse"] for r in rows}) == 1


def test_rerun_skips_finished_units_and_overwrite_recomputes(host, tmp_path, monkeypatch):
    first = run_case(make_case(host, tmp_path))
    stamps = {p: p.stat().st_mtime_ns for p in unit_files(tmp_path)}

    def no_fit(*args, **kwargs):
        raise AssertionError("a finished case must not fit again")

    monkeypatch.setattr(case_module, "make_regressor", no_fit)
    assert run_case(make_case(host, tmp_path)) == first
    assert {p: p.stat().st_mtime_ns for p in unit_files(tmp_path)} == stamps
    monkeypatch.undo()
    run_case(make_case(host, tmp_path, overwrite=True))
    assert all(p.stat().st_mtime_ns != stamps[p] for p in unit_files(tmp_path))


def test_a_changed_setting_makes_a_unit_stale(host, tmp_path):
    run_case(make_case(host, tmp_path, units=(UnitSpec("oa_only"),)))
    (path,) = unit_files(tmp_path)
    before = json.loads(path.read_text())
    run_case(make_case(host, tmp_path, units=(UnitSpec("oa_only"),), n_estimators=2))
    after = json.loads(path.read_text())
    assert (before["n_estimators"], after["n_estimators"]) == (1, 2)
    assert before["fingerprint"] != after["fingerprint"]


def test_interrupted_case_loses_nothing_and_duplicates_nothing(host, tmp_path, monkeypatch):
    patch = retrofit.retrofit

    def crash_on_full_o(regressor, variant, **hparams):
        if variant == "full_o":
            raise KeyboardInterrupt
        return patch(regressor, variant, **hparams)

    monkeypatch.setattr(retrofit, "retrofit", crash_on_full_o)
    with pytest.raises(KeyboardInterrupt):
        run_case(make_case(host, tmp_path, units=(UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("full_o"))))
    assert [p.name for p in unit_files(tmp_path)] == ["variant=baseline.json", "variant=oa_only.json"]
    kept = unit_files(tmp_path)[1].read_text()
    monkeypatch.undo()
    run_case(make_case(host, tmp_path))
    assert len(unit_files(tmp_path)) == 3 and unit_files(tmp_path)[2].read_text() == kept
    assert not list(tmp_path.rglob("*.tmp"))


def test_unknown_hparam_and_missing_host_are_user_errors(tmp_path, host):
    from retrofit.runner.config import unit_specs

    with pytest.raises(RunnerError, match="unknown retrofit hyper-parameters"):
        unit_specs(["oa_only"], {"temperature": 2})
    with pytest.raises(retrofit.errors.RetrofitError):
        run_case(make_case(tmp_path / "missing.safetensors", tmp_path))
    assert unit_files(tmp_path) == []


# --- aggregation ------------------------------------------------------------------------------


def synthetic_runs(results_dir: Path) -> None:
    store = UnitStore(results_dir / "runs")
    rng = np.random.default_rng(0)
    for dataset in ("a", "b"):
        for seed in range(3):
            for variant, shift in (("baseline", 0.0), ("oa_only", 0.1), ("full_o", 0.2)):
                delta = 0.0 if variant == "baseline" else shift + rng.normal(0, 0.05)
                row = dict(
                    dataset=dataset, seed=seed, variant=variant, host="h", n_train=70, n_test=30, n_features=4,
                    rmse=1 + delta / 100, baseline_rmse=1.0, delta_rmse_pct=delta, tau="", eps_den=None,
                    predict_seconds=1.1, baseline_predict_seconds=1.0, fit_seconds=0.1, n_categorical=0,
                    n_missing_target=0, n_estimators=1, hparams={}, fingerprint="x",
                )  # fmt: skip
                store.write(UnitKey("h", dataset, seed, variant), row)


def test_aggregate_writes_csv_table_and_plot(tmp_path):
    synthetic_runs(tmp_path)
    frame = agg.aggregate(tmp_path)
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert len(csv) == 18 and list(csv.columns) == agg.COLUMNS
    assert frame[["dataset", "seed", "variant"]].duplicated().sum() == 0
    table = (tmp_path / "retrofit_table.md").read_text()
    assert "6 host × dataset × seed cases" in table and re.search(r"\|\s*h\s*\|\s*a\s*\|", table)
    assert (tmp_path / "retrofit_deltas.png").read_bytes()[:4] == b"\x89PNG"


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    values = np.random.default_rng(1).normal(0.1, 0.05, 18)
    low, high = agg.bootstrap_ci(values)
    assert low < values.mean() < high and (low, high) == agg.bootstrap_ci(values)
    assert np.isnan(agg.bootstrap_ci(values[:1])).all()
