"""The aggregation as a pure step over records: single runs accumulate in a results_dir, the headline
table, the columns' units, the long format, files written 0644; aggregating a finished unit store
loads neither torch nor tabpfn."""

import math
from dataclasses import asdict

import pandas as pd
from processes import run_python

from retrofit.metrics import matched_deltas
from retrofit.results.aggregate import aggregate, headline, outputs
from retrofit.results.long_format import COLUMN_DOCS as LONG_DOCS
from retrofit.results.record import COLUMNS, UnitRecord, hparams_text, read_records
from retrofit.runner.store import floor_commands, noise_floors
from retrofit.runner.store import UnitStore


def record(dataset: str, variant: str, delta: float, **values) -> UnitRecord:
    """A unit's record with made-up numbers: ΔRMSE `delta` %, coverage moved by `delta` points."""
    base = dict.fromkeys(
        ["rmse", "baseline_rmse", "nll", "baseline_nll", "crps", "baseline_crps", "predict_seconds"], 1.0
    )
    row = {
        **base,
        **dict(dataset=dataset, seed=0, variant=variant, host="h", device="cpu", hparams=""),
        **dict(n_train=10, n_test=5, n_features=2, n_categorical=0, n_missing_target=0, n_estimators=1),
        **dict(delta_rmse_pct=delta, delta_nll=0.0, delta_crps_pct=0.0, delta_coverage_90=delta / 100),
        **dict(coverage_90=0.9, baseline_coverage_90=0.9, baseline_predict_seconds=1.0, fit_seconds=0.1),
        **dict(predict_time_ratio=1.5, predict_time_ratio_min=1.0, predict_time_ratio_max=2.0),
        **dict(tau=math.nan, tau_c=math.nan, eps_den=math.nan, eps_mode=""),
    }
    return UnitRecord.from_row({**row, **values})


def test_single_runs_into_one_results_dir_accumulate(tmp_path):
    aggregate(tmp_path, [record("a", "baseline", 0.0), record("a", "oa_only", 1.0)], keep=True)
    aggregate(tmp_path, [record("b", "baseline", 0.0), record("b", "oa_only", 3.0)], keep=True)
    rerun = [record("a", "baseline", 0.0), record("a", "oa_only", 2.0)]  # the same units again: replaced
    frame = aggregate(tmp_path, rerun, keep=True)
    assert len(frame) == 4 and frame.set_index(["dataset", "variant"]).loc[("a", "oa_only"), "delta_rmse_pct"] == 2.0
    assert "2 host × dataset × seed cases" in (tmp_path / "retrofit_table.md").read_text()
    assert [r.dataset for r in read_records(tmp_path / "retrofit_rmse.csv")] == ["a", "a", "b", "b"]
    assert list(pd.read_csv(tmp_path / "retrofit_rmse.csv").columns) == COLUMNS


def test_the_headline_gives_each_host_mean_ci_signed_largest_and_time():
    frame = pd.DataFrame(
        [vars(r) for r in [record(d, v, x) for d, v, x in [("a", "oa_only", -3.0), ("b", "oa_only", 1.0)]]]
    )
    line = headline(frame).splitlines()[2]
    assert "| oa_only " in line and "-1.000 [" in line and "(-3.000)" in line and "1.50×" in line
    assert "not run" in headline(pd.concat([frame, frame.assign(host="g", variant="o_closed")]))


def test_coverage_is_shown_in_points_and_every_file_is_listed(tmp_path):
    frame = aggregate(
        tmp_path, [record("a", "baseline", 0.0), record("a", "oa_only", 2.0), record("b", "oa_only", 4.0)]
    )
    table = (tmp_path / "retrofit_table.md").read_text()
    assert "Δcoverage of the 90% interval (points)" in table and "+3.0000" in table  # 0.03 as a fraction
    assert outputs(frame) == [
        "retrofit_rmse.csv",
        "retrofit_long.csv",
        "retrofit_table.md",
        "retrofit_deltas.png",
        "retrofit_distribution_deltas.png",
    ]
    assert all((tmp_path / name).is_file() for name in outputs(frame))


def test_the_long_format_has_a_row_per_unit_and_metric_that_gives_back_the_wide_values(tmp_path):
    units = [
        record("a", "baseline", 0.0, rmse=2.0, baseline_rmse=2.0, nll=1.5, crps=0.75, fit_seconds=0.25),
        record("a", "oa_only", 5.0, rmse=2.1, baseline_rmse=2.0, nll=1.25, crps=0.5, fit_seconds=0.25),
        record("a", "oa_only", 1.0, hparams="tau.c=0.01", rmse=2.02, baseline_rmse=2.0, predict_seconds=3.0),
        record("b", "oa_only", 2.0, seed=1, host="g", n_estimators=2, rmse=4.0, baseline_rmse=3.0),
    ]
    frame = aggregate(tmp_path, units, table=False)
    long = pd.read_csv(tmp_path / "retrofit_long.csv").fillna({"hparams": "", "arm": ""})
    assert len(long) == 3 * len(frame) and list(long.columns) == list(LONG_DOCS)
    assert sorted(long["method"].unique()) == ["g/oa_only", "h/baseline", "h/oa_only", "h/oa_only (tau.c=0.01)"]
    wide = long.pivot(index=["host", "variant", "hparams", "dataset", "fold"], columns="metric")
    for row in frame.itertuples():
        cell = wide.loc[(row.host, row.variant, row.hparams, row.dataset, row.seed)]
        assert [cell["metric_error", m] for m in ("rmse", "nll", "crps")] == [row.rmse, row.nll, row.crps]
        assert [cell["baseline_error", m] for m in ("rmse", "nll", "crps")] == [
            row.baseline_rmse,
            row.baseline_nll,
            row.baseline_crps,
        ]
        assert (cell["time_train_s"] == row.fit_seconds).all() and (cell["time_infer_s"] == row.predict_seconds).all()
    tuned = wide.loc[("h", "oa_only", "tau.c=0.01", "a", 0)]
    assert tuned["metric_error", "rmse"] == 2.02 and tuned["time_infer_s", "rmse"] == 3.0
    assert set(long["problem_type"]) == {"regression"}


def test_hparams_are_flattened_and_sorted():
    assert hparams_text({"tau": {"mode": "calibrated", "c": 0.01}, "eps_mode": "relative"}) == (
        "eps_mode=relative,tau.c=0.01,tau.mode=calibrated"
    )
    assert hparams_text(None) == "" and hparams_text("a=1") == "a=1"


AGGREGATE_A_STORE = """
import sys
from pathlib import Path
from retrofit.results.aggregate import aggregate
from retrofit.results.record import UnitRecord
from retrofit.runner.store import UnitStore
rows = [UnitStore(Path(sys.argv[1])).read(path) for path in sorted(Path(sys.argv[1]).rglob("*.json"))]
aggregate(Path(sys.argv[2]), [UnitRecord.from_row(row) for row in rows])
print(len(rows), sorted(name for name in ("torch", "tabpfn") if name in sys.modules))
"""


def test_aggregating_a_finished_unit_store_imports_neither_torch_nor_tabpfn(tmp_path):
    store = UnitStore(tmp_path / "runs")
    for i, (variant, rmse) in enumerate([("baseline", 1.0), ("oa_only", 1.25)]):
        made_up = record("a", variant, 0.0, rmse=rmse, coverage_90=0.5, baseline_coverage_90=0.4)
        store.write(f"unit{i}", asdict(made_up) | matched_deltas(asdict(made_up)))  # deltas as a run computes them
    out = run_python("-c", AGGREGATE_A_STORE, str(tmp_path / "runs"), str(tmp_path / "results"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "[]"] and (tmp_path / "results" / "retrofit_rmse.csv").is_file()


def test_a_mean_delta_within_its_hosts_noise_floor_is_marked_and_each_floor_said(tmp_path):
    frame = pd.DataFrame([vars(r) for r in [record("a", "oa_only", 1.0), record("a", "full_o", 3.0)]])
    floors_csv = tmp_path / "noise_floor.csv"
    pd.DataFrame(
        {
            "host": ["h", "h"],
            "host_digest": ["d", "d"],
            "source": ["input_ulp", "threads"],
            "cases": [4, 4],
            "median_rel_pct": [0.5, 0.1],
            "max_rel_pct": [1.5, 0.2],
        }
    ).to_csv(floors_csv, index=False)
    floors = noise_floors(floors_csv)
    assert floors == {("h", "cpu"): 1.5}  # the largest movement over the sources
    text = headline(frame, floors)
    assert "| oa_only   | +1.000 ≈0 (+1.000)" in text and "+3.000 (+3.000)" in text
    assert "h 1.5 %" in text and "≈0: a mean |ΔRMSE| within its host's floor" in text
    unmeasured = headline(frame, noise_floors(tmp_path / "none.csv"), floor_commands(frame, {}))
    assert "≈0 (" not in unmeasured
    command = "python -m retrofit noise_floor host=checkpoint host.name=h host.path=<h's checkpoint file>"
    assert f"h: floor not measured (measure it: {command} datasets=[{frame.dataset[0]}] device=cpu)" in unmeasured
    on_gpu = frame.assign(host="tiny_v3", device="NVIDIA H200")
    text = headline(on_gpu, {("tiny_v3", "cpu"): 99.0}, floor_commands(on_gpu, {("tiny_v3", "cpu"): 99.0}))
    assert "≈0" not in text.split("Noise floor")[0]  # the CPU's floor does not mark a GPU row
    assert (
        "tiny_v3 on NVIDIA H200: floor not measured (measure it: python -m retrofit noise_floor host=tiny_v3 " in text
    )
