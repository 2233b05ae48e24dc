"""The aggregation as a pure step over records: single runs accumulate in a results_dir, the headline
table, the columns' units, the long format, files written 0644; aggregating a finished unit store
loads neither torch nor tabpfn."""

import math
import multiprocessing
import os
import re
import subprocess
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import run_python
from refusals import one_line

from retrofit.errors import RunnerError
from retrofit.metrics import matched_deltas
from retrofit.results import run_files as agg
from retrofit.results.long_format import COLUMN_DOCS as LONG_DOCS
from retrofit.results.record import COLUMNS, UnitRecord, read_records
from retrofit.results.run_files import aggregate, headline, outputs
from retrofit.runner.finish import floor_commands, noise_floors
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


def test_a_run_without_arms_into_a_results_dir_with_arm_rows_keeps_and_plots_them(tmp_path):
    arms = [record("a", "baseline", 0.0), record("a", "o_closed", 1.0).labelled("sink", arm_extra=True)]
    aggregate(tmp_path, arms, keep=True)
    aggregate(tmp_path, [record("b", "baseline", 0.0), record("b", "oa_only", 2.0)], keep=True)
    kept = pd.read_csv(tmp_path / "decomposition.csv")
    assert list(zip(kept["variant"], kept["arm"], strict=True)) == [("o_closed", "sink")]
    assert (tmp_path / "decomposition.png").stat().st_size > 0


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
    assert "| Δcoverage 90% (points) " in table and "| +3.0000 [+2.0000, +4.0000] |" in table  # 0.03 as a fraction
    assert outputs(frame) == [
        "retrofit_rmse.csv",
        "retrofit_long.csv",
        "retrofit_table.md",
        "retrofit_table.tex",
        "retrofit_per_dataset.md",
        "retrofit_per_dataset.tex",
        "retrofit_times.md",
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


AGGREGATE_A_STORE = """
import sys
from pathlib import Path
from retrofit.results.run_files import aggregate
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
    assert "h 1.500 %" in text and "≈0: a mean |ΔRMSE| within its host's floor" in text
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
    assert "6 host × dataset × seed cases" in table and "| baseline " not in table  # the baseline: 0 by definition
    assert re.search(r"\|\s*h\s*\|\s*oa_only\s*\|\s*6\s*\|.*\|\s*6 / 0\s*\|", table)  # all six cases above zero
    assert "not given" in table  # no noise floors handed to this aggregation
    assert re.search(r"\|\s*h\s*\|\s*a\s*\|\s*3\s*\|", (tmp_path / "retrofit_per_dataset.md").read_text())
    times = (tmp_path / "retrofit_times.md").read_text()  # median of the timed units' ratios, their range, count
    assert re.search(r"\|\s*h\s*\|\s*oa_only\s*\|\s*4\s*\|\s*1\.25×\s*\|\s*1\.20–1\.30\s*\|\s*1\.20–1\.30\s*\|", times)
    assert "| missed " in times and "| within noise " not in times  # every round above 1.10×
    assert (tmp_path / "retrofit_deltas.png").read_bytes()[:4] == b"\x89PNG"


def test_a_variant_not_run_on_a_dataset_is_named_so_in_the_table():
    rows = [r for r in synthetic_rows() if not (r["dataset"] == "b" and r["variant"] == "full_o")]
    table = agg.per_dataset(agg.frame_of(rows)).set_index("dataset")
    assert table.loc["b", "full_o"] == "not run" and table.loc["a", "full_o"].startswith("+")


def test_a_run_of_the_baseline_alone_says_so_in_every_table(tmp_path):
    aggregate(tmp_path, [record("a", "baseline", 0.0)])
    for name in ("retrofit_table.md", "retrofit_table.tex", "retrofit_times.md"):
        assert "no variant beyond the baseline ran" in (tmp_path / name).read_text(), name
    assert (tmp_path / "retrofit_deltas.png").read_bytes()[:4] == b"\x89PNG"


def test_the_per_dataset_table_gives_each_variants_mean_and_sd_over_the_seeds():
    rows = agg.frame_of(synthetic_rows())
    table = agg.per_dataset(rows).set_index(["host", "dataset"])
    deltas = rows[(rows["dataset"] == "b") & (rows["variant"] == "full_o")]["delta_rmse_pct"].to_numpy()
    assert len(deltas) == 3 and table.loc[("h", "b"), "seeds"] == "3"
    assert table.loc[("h", "b"), "full_o"] == f"{deltas.mean():+.3f} ± {np.std(deltas, ddof=1):.3f}"
    assert "baseline" not in table.columns  # 0 by definition


def test_the_latex_table_is_booktabs_with_every_name_escaped():
    from retrofit.results.render import latex

    cells = pd.DataFrame({"host": ["tiny_v3_5"], "mean ΔRMSE %": ["-0.006"], "cases > 0 / < 0": ["11 / 7"]})
    tex = latex(cells, "ΔRMSE in % & `more`", "tab:x")
    assert [tex.count(rule) for rule in (r"\toprule", r"\midrule", r"\bottomrule")] == [1, 1, 1]
    assert r"\begin{tabular}{lrr}" in tex and r"tiny\_v3\_5 & \ensuremath{-}0.006 & 11 / 7 \\" in tex
    assert r"mean \ensuremath{\Delta}RMSE \% & cases \ensuremath{>} 0 / \ensuremath{<} 0" in tex
    assert r"\caption{\ensuremath{\Delta}RMSE in \% \& \texttt{more}}" in tex
    assert not re.search(r"[^\x00-\x7f]|[<>|]", re.sub(r"\\ensuremath\{[^}]*\}", "", tex))  # no sign left bare


def _accumulate(results_dir: Path, barrier, dataset: str) -> None:
    """One writer: waits for the other, then adds its case's two rows to `results_dir`."""
    barrier.wait()
    agg.aggregate(results_dir, [record(dataset, "baseline", 0.0), record(dataset, "oa_only", 1.0)], keep=True)


def test_concurrent_single_runs_into_one_results_dir_never_lose_rows(tmp_path):
    """Two processes released together (a barrier), three times over: every row of every writer is
    in the CSV at the end."""
    context = multiprocessing.get_context("fork")
    for attempt in range(3):
        barrier = context.Barrier(2)
        writers = [context.Process(target=_accumulate, args=(tmp_path, barrier, f"d{attempt}_{i}")) for i in range(2)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=300)
        assert [writer.exitcode for writer in writers] == [0, 0]
    frame = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(set(frame["dataset"])) == [f"d{attempt}_{i}" for attempt in range(3) for i in range(2)]
    assert len(frame) == 12


def test_runs_of_different_settings_are_kept_apart_and_said_never_pooled(tmp_path):
    rows = [record("a", "oa_only", 1.0, n_estimators=1), record("b", "oa_only", 3.0, n_estimators=8)]
    rows += [record("a", "baseline", 0.0, n_estimators=1), record("b", "baseline", 0.0, n_estimators=8)]
    frame = agg.aggregate(tmp_path, rows)
    line = headline(frame)
    assert line.startswith("Rows differ in n_estimators: kept apart")
    assert "h (n_estimators=1) ΔRMSE %" in line and "h (n_estimators=8) ΔRMSE %" in line
    assert "+1.000" in line and "+3.000" in line and "+2.000" not in line  # never the pooled mean
    table = (tmp_path / "retrofit_table.md").read_text()
    assert "Rows differ in n_estimators" in table and "+2.000" not in table
    same = agg.aggregate(tmp_path / "same", [r for r in rows if r.n_estimators == 1])
    assert "Rows differ" not in headline(same)


def test_a_run_with_other_settings_never_replaces_rows_silently(tmp_path):
    """n_estimators=1 after n_estimators=2 into one results_dir used to replace the earlier rows."""
    first = [record("a", "baseline", 0.0, n_estimators=2), record("a", "oa_only", 1.0, n_estimators=2)]
    agg.aggregate(tmp_path, first, keep=True)
    before = (tmp_path / "retrofit_rmse.csv").read_bytes()
    other = [record("a", "baseline", 0.0, n_estimators=1), record("a", "oa_only", 5.0, n_estimators=1)]
    with pytest.raises(
        RunnerError,
        match=r"holds 2 rows this run would replace by rows of other settings, e\.g\. "
        r"h/a/seed=0/baseline \(n_estimators 2 -> 1\); write to another results_dir",
    ):
        agg.aggregate(tmp_path, other, keep=True)
    assert (tmp_path / "retrofit_rmse.csv").read_bytes() == before


def _hold_lock(path: str, ready, release) -> None:
    from filelock import FileLock

    with FileLock(path):
        ready.set()
        release.wait(30)


@pytest.mark.parametrize(
    ("tear", "damage"),
    [
        (lambda text: text[: text.rindex("\n", 0, -1) + 40], r"line 4 has \d+ fields, the header 49"),
        (lambda text: text[:-1], "it ends mid-row, without a line break after its last row"),
        (lambda text: text.replace("\n", ",x,y\n", 2).replace(",x,y", "", 1), r"line 2 has 51 fields, the header 49"),
        (lambda text: "", "No columns to parse from file"),
        (lambda text: "a,b\n1,2\n", r"its header lacks the columns \['dataset', 'seed', .* and \d+ more \(34 in all\)"),
        (lambda text: text.replace("\na,0,", "\na,zero,", 1), r"a cell is not of its column's type: .*'zero'"),
    ],
    ids=["cut-mid-row", "cut-in-its-last-field", "long-row", "empty", "another-table", "a-text-seed"],
)
def test_a_damaged_results_csv_is_named_with_the_command_that_moves_it_aside(tmp_path, tear, damage):
    """A retrofit_rmse.csv cut mid-row was refused as "rows of other settings" (its last row read
    with empty settings), one with a long row ended in pandas' ParserError, another table was
    answered "recompute it (overwrite=true)", which reads it again, a text seed ended in a
    ValueError, and the folder stayed unusable; each is named as damaged in one line whose `mv`
    command, run, makes the folder usable."""
    results = tmp_path / "my results"
    rows = [record("a", "baseline", 0.0), record("a", "oa_only", 1.0), record("b", "oa_only", 2.0)]
    agg.aggregate(results, rows, keep=True)
    csv = results / "retrofit_rmse.csv"
    csv.write_text(tear(csv.read_text()))
    with pytest.raises(RunnerError) as err:
        agg.aggregate(results, rows[:1], keep=True)
    message = one_line(err)
    move = f"mv '{csv}' '{csv}.damaged'"
    assert re.fullmatch(
        rf"{re.escape(str(csv))} is damaged \({damage}\); move it aside, `{re.escape(move)}`, and rerun "
        "each command that wrote there: its rows come back from its stored units",
        message,
    ), message
    subprocess.run(move, shell=True, check=True)
    assert len(agg.aggregate(results, rows[:1], keep=True)) == 1


def test_a_writer_waiting_on_the_results_lock_says_so_after_a_second(tmp_path, capfd):
    """A run whose results_dir another process was writing used to wait in silence for minutes."""
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path / agg.LOCK), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        timer = __import__("threading").Timer(2.5, release.set)
        timer.start()
        agg.aggregate(tmp_path, [record("a", "baseline", 0.0)], keep=True, table=False)
    finally:
        release.set()
        holder.join(30)
    said = capfd.readouterr().err
    assert f"waiting for {tmp_path / agg.LOCK}: another process is writing {tmp_path / 'retrofit_rmse.csv'}" in said
    assert len(pd.read_csv(tmp_path / "retrofit_rmse.csv")) == 1


def test_a_lock_path_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / agg.LOCK).mkdir()
    with pytest.raises(RunnerError, match=rf"{re.escape(str(tmp_path / agg.LOCK))} is a folder, and .* remove it"):
        agg.aggregate(tmp_path, [record("a", "baseline", 0.0)], keep=True)


def test_a_lock_path_that_is_a_link_is_one_line_and_its_target_untouched(tmp_path):
    """A lock linked to another file (the committed record's, say) ended in filelock's OSError
    "Too many levels of symbolic links" after the run's work."""
    target = tmp_path / "elsewhere.md"
    target.write_text("kept\n")
    (tmp_path / agg.LOCK).symlink_to(target)
    with pytest.raises(RunnerError) as err:
        agg.aggregate(tmp_path, [record("a", "baseline", 0.0)], keep=True)
    assert one_line(err) == (
        f"{tmp_path / agg.LOCK} is a link, and {tmp_path / 'retrofit_rmse.csv'} is written under a lock file "
        "of that name; remove it"
    )
    assert target.read_text() == "kept\n" and not (tmp_path / "retrofit_rmse.csv").exists()


def test_a_full_disk_while_plotting_keeps_the_new_rows_and_the_last_tables_whole(tmp_path, monkeypatch):
    """ENOSPC part way used to leave a new CSV beside the old plots, in a traceback; the CSVs of a write
    now land together first, the tables and plots together after them or not at all, and the failure
    is one line saying the rows are in and how to render the tables."""
    import errno

    agg.aggregate(tmp_path, [record("a", "baseline", 0.0), record("a", "oa_only", 1.0)], keep=True)
    tables = [name for name in agg.MAIN_TABLES if (tmp_path / name).is_file()]
    before = {name: (tmp_path / name).read_bytes() for name in tables}
    assert {"retrofit_table.md", "retrofit_deltas.png"} <= set(before)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(agg, "plot_main", full)
    with pytest.raises(RunnerError) as refused:
        agg.aggregate(tmp_path, [record("b", "baseline", 0.0), record("b", "oa_only", 2.0)], keep=True)
    said = one_line(refused)
    assert said.startswith(f"{tmp_path / agg.CSV} holds this run's rows, but its tables and plots were not rewritten")
    assert "(No space left on device); none of its files changed" in said
    assert said.endswith(f"python experiments/tables.py results_dir={tmp_path}")
    assert [r.dataset for r in read_records(tmp_path / agg.CSV)] == ["a", "a", "b", "b"]
    assert {name: (tmp_path / name).read_bytes() for name in tables} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staged-")]


def test_a_run_without_arms_into_a_folder_with_arms_keeps_their_rows_names_and_order(tmp_path):
    """A run of main units alone into a folder whose rows hold a decomposition used to lose the arms'
    names (the order came from the run's records alone), and plotting them raised a TypeError."""
    arms = ["paper", "sink_only", "identity_check"]
    first = [record("a", "baseline", 0.0), record("a", "oa_only", 1.0, arm="paper")]
    first += [
        record("a", "oa_only", d, arm=arm, arm_extra=True, hparams=arm) for d, arm in [(0.0, arms[1]), (-0.5, arms[2])]
    ]
    aggregate(tmp_path, first, keep=True)
    written = pd.read_csv(tmp_path / agg.ARMS_CSV)
    assert list(written["arm"]) == arms
    frame = aggregate(tmp_path, [record("b", "baseline", 0.0), record("b", "oa_only", 3.0)], keep=True)
    assert len(frame) == 6 and sorted(set(frame["dataset"])) == ["a", "b"]
    assert pd.read_csv(tmp_path / agg.ARMS_CSV).equals(written)
    assert all(f"| {arm} " in (tmp_path / agg.ARMS_TABLE).read_text() for arm in arms)
    assert (tmp_path / agg.ARMS_PLOT).stat().st_size > 0


def test_aggregate_shows_the_floors_it_is_handed_for_the_frame(tmp_path):
    seen = []

    def floors(frame):
        seen.append(len(frame))
        return {("h", "cpu"): 0.25}

    agg.aggregate(tmp_path, synthetic_rows(), floors=floors)
    table = (tmp_path / "retrofit_table.md").read_text()
    assert seen == [18]  # called once, on the aggregated frame
    assert "not given" not in table and "0.25" in table


def test_frame_floors_reads_autocast_only_for_a_run_all_in_auto(tmp_path):
    from retrofit.measure.floor_table import AUTOCAST_SOURCE
    from retrofit.runner.finish import frame_floors

    table = tmp_path / "noise_floor.csv"
    pd.DataFrame(
        [
            dict(
                host="h",
                host_digest="d",
                device="cpu",
                source="input_ulp",
                cases=2,
                median_rel_pct=0.1,
                max_rel_pct=0.2,
            ),
            dict(
                host="h",
                host_digest="d",
                device="cpu",
                source=AUTOCAST_SOURCE,
                cases=2,
                median_rel_pct=1,
                max_rel_pct=3.0,
            ),
        ]
    ).to_csv(table, index=False)
    assert frame_floors(pd.DataFrame({"precision": ["float32", "auto"]}), table) == {("h", "cpu"): 0.2}
    assert frame_floors(pd.DataFrame({"precision": ["auto", "auto"]}), table) == {("h", "cpu"): 3.0}
