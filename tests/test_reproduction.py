"""Comparing two results files unit by unit: the largest difference per column and where, mean ΔRMSE
per variant in each file, units found in one file only."""

import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import run_entry_point
from refusals import one_line
from test_run_files import synthetic_rows

from retrofit.errors import RunnerError
from retrofit.results import run_files as agg
from retrofit.results.reproduction import TIMES as NOT_COMPARED
from retrofit.results.reproduction import (
    TOLERANCES,
    Reference,
    check,
    diff_units,
    read_reference,
    require_covered,
    verify,
)
from retrofit.runner import reference_of
from retrofit.unit_key import UnitKey

ROOT = Path(__file__).resolve().parents[1]


def results(rows: int = 4) -> pd.DataFrame:
    """A small results frame: host h, datasets a/b, seed 0, variants baseline / oa_only."""
    frame = pd.DataFrame(
        {
            "host": "h",
            "dataset": ["a", "a", "b", "b"],
            "seed": 0,
            "variant": ["baseline", "oa_only"] * 2,
            "hparams": float("nan"),  # as pandas reads an empty column
            "rmse": [1.0, 1.01, 2.0, 1.98],
            "delta_rmse_pct": [0.0, 1.0, 0.0, -1.0],
            "tau_rule": ["", "c=0.001 (calibrated)"] * 2,
            "arm_extra": False,
        }
    )
    return frame.iloc[:rows]


def test_the_largest_difference_per_column_is_found_with_its_unit():
    a, b = results(), results()
    b.loc[3, ["rmse", "delta_rmse_pct"]] = [1.96, -2.0]  # b's oa_only on dataset b is 1 point better
    comparison = diff_units(a, b)
    columns = comparison.columns.set_index("column")
    assert columns.loc["rmse", "max |A − B|"] == pytest.approx(0.02)
    assert columns.loc["rmse", "relative"] == pytest.approx(0.02 / 1.96)
    assert columns.loc["delta_rmse_pct", "where"] == "host=h/dataset=b/seed=0/variant=oa_only"
    assert "tau_rule" not in columns.index  # text columns are not differenced
    assert not columns.loc["rmse", "within tolerance"] and comparison.extremes.rel_column in ("rmse", "delta_rmse_pct")
    assert columns.loc["arm_extra", "max |A − B|"] == 0.0  # a flag is differenced as 0 / 1
    variants = comparison.variants.set_index("variant")
    assert variants.loc["oa_only", ["A", "B", "A − B"]].tolist() == pytest.approx([0.0, -0.5, 0.5])
    assert variants.loc["oa_only", "units"] == 2 and comparison.matched == 4


def test_units_in_one_file_only_are_listed_and_a_value_missing_in_one_counts():
    a, b = results(), results(rows=3)
    a.loc[0, "rmse"] = float("nan")
    comparison = diff_units(a, b)
    assert comparison.only_a == ("host=h/dataset=b/seed=0/variant=oa_only",) and comparison.only_b == ()
    assert comparison.columns.set_index("column").loc["rmse", "where"] == "host=h/dataset=a/seed=0/variant=baseline"
    assert "1 only in A" in comparison.text()


def test_a_zero_reference_has_no_relative_difference_and_the_line_says_the_absolute_one():
    """Equal values differ by 0, zeros included; a value against a reference 0 has no relative
    difference, so the line gives its |Δ| on its own and the table says n/a; a value in one file only
    is counted. None of them reads as inf."""
    assert "(max rel |Δ| 0, 3 columns)" in check(results(), results()).line()  # baselines' deltas: 0 in both
    a, b = results(), results()
    a.loc[0, "delta_rmse_pct"] = 2e-7  # against the reference's exact 0, within delta_atol
    a.loc[1, "rmse"] *= 1 + 3e-6
    comparison = check(a, b)
    expected = "(max rel |Δ| 3e-06 in rmse, max |Δ| 2e-07 where the reference is 0 in delta_rmse_pct, 3 columns)"
    assert expected in comparison.line() and comparison.ok
    columns = comparison.columns.set_index("column")
    assert np.isnan(columns.loc["delta_rmse_pct", "relative"]) and columns.loc["delta_rmse_pct", "within tolerance"]
    assert "| n/a (reference 0) " in comparison.largest() and "inf" not in comparison.largest()
    a.loc[2, "rmse"] = float("nan")
    missing = check(a, b)
    assert "3e-06 in rmse, max |Δ| 2e-07 where the reference is 0 in delta_rmse_pct, 1 value in one file only, " in (
        missing.line()
    )
    assert not missing.ok and "n/a (a value in one file only)" in missing.largest()


def test_files_that_are_not_results_are_refused():
    with pytest.raises(RunnerError, match=r"B lacks the columns \['variant'\]"):
        diff_units(results(), results().drop(columns="variant"))
    with pytest.raises(RunnerError, match="A lists 4 units twice"):
        diff_units(pd.concat([results(), results()]), results())


def test_differences_within_the_tolerances_agree_and_changed_inputs_are_listed_not_differing():
    a, b = results().assign(host_digest="h1"), results().assign(host_digest="h1")
    a["rmse"] *= 1 + 5e-6  # last-bit rounding of another CPU: within 1e-5 relative
    a.loc[1, "delta_rmse_pct"] += 5e-4  # within 1e-3 percentage points
    same = diff_units(a, b)
    assert not same.differing and same.columns["within tolerance"].all()
    a.loc[3, "rmse"] *= 1.01
    assert diff_units(a, b).differing == ("host=h/dataset=b/seed=0/variant=oa_only (rmse)",)
    moved = diff_units(a.assign(host_digest=["h1", "h1", "h2", "h2"]), b)  # dataset b ran on another host file
    assert not moved.differing
    assert moved.changed_inputs == (
        "host=h/dataset=b/seed=0/variant=baseline",
        "host=h/dataset=b/seed=0/variant=oa_only",
    )
    assert "recomputed from changed inputs (host or data): host=h/dataset=b" in moved.text()


def test_timings_are_never_compared():
    a, b = results().assign(predict_seconds=1.0), results().assign(predict_seconds=9.0)
    comparison = diff_units(a, b)
    assert "predict_seconds" not in set(comparison.columns["column"]) and not comparison.differing


BAD_FILES = {
    "missing": (lambda path: None, r"A .*missing\.csv does not exist; pass a retrofit_rmse\.csv"),
    "directory": (lambda path: path.mkdir(), r"A .*directory\.csv is not a file"),
    "empty": (lambda path: path.write_text(""), r"A .*empty\.csv is not a readable CSV"),
    "non-utf8": (
        lambda path: path.write_bytes(b"host,dataset\n\xff\xfe,\x80\n"),
        r"A .*non-utf8\.csv is not a readable CSV",
    ),
    "rmse-text": (
        lambda path: results().assign(rmse="abc").to_csv(path, index=False),
        r"A: column 'rmse' holds text where numbers belong",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_file_that_is_not_results_is_refused_in_one_line_by_the_command(tmp_path, name):
    """A missing file, a directory, an empty file, bytes that are not UTF-8, text in a number column:
    one line naming the file (or the column), exit 1, nothing shown as 0."""
    make, message = BAD_FILES[name]
    path, good = tmp_path / f"{name}.csv", tmp_path / "good.csv"
    make(path)
    results().to_csv(good, index=False)
    out = run_entry_point("diff.py", str(path), str(good), cwd=ROOT)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert re.search(message, out.stderr) and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "| rmse " not in out.stdout


def test_the_command_prints_the_tables(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    results().to_csv(a, index=False)
    results().assign(rmse=lambda f: f["rmse"] * 2).to_csv(b, index=False)
    out = run_entry_point("diff.py", str(a), str(b), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "## Largest difference per column" in out.stdout and "| rmse " in out.stdout
    assert "## Mean ΔRMSE % per host × variant" in out.stdout


def test_the_committed_record_compares_with_a_changed_copy_of_itself():
    """Every column type of the real record (flags, text, NaN timings) goes through; one changed
    value is found where it was made."""
    record = pd.read_csv(ROOT / "results" / "retrofit_rmse.csv")
    changed = record.copy()
    row = changed.index[(changed["variant"] == "full_o") & (changed["dataset"] == "wage")][0]
    changed.loc[row, "nll"] += 0.5
    comparison = diff_units(changed, record)
    columns = comparison.columns.set_index("column")
    assert comparison.matched == len(record) and not comparison.only_a and not comparison.only_b
    assert columns.loc["nll", "max |A − B|"] == pytest.approx(0.5)
    assert "dataset=wage" in columns.loc["nll", "where"] and "variant=full_o" in columns.loc["nll", "where"]
    assert columns.loc["rmse", "max |A − B|"] == 0.0 and columns.loc["arm_extra", "max |A − B|"] == 0.0


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


def reference_frame(tmp_path: Path, rows: list[dict]) -> pd.DataFrame:
    agg.aggregate(tmp_path, rows, table=False)
    return pd.read_csv(tmp_path / "retrofit_rmse.csv")


RESULT_COLUMNS = ["rmse", "delta_rmse_pct", "nll", "delta_nll", "crps", "delta_crps_pct", "coverage_90"]


@pytest.mark.parametrize("column", [*RESULT_COLUMNS, "delta_coverage_90", "baseline_rmse"])
@pytest.mark.parametrize("side", ["new", "reference"])
def test_an_edit_of_any_result_column_on_either_side_fails_by_name(finished, tmp_path, column, side):
    frame = reference_frame(tmp_path, finished[1])
    edited = frame.copy()
    edited.loc[1, column] += 2e-3  # beyond every tolerance (1e-3 points on the % deltas)
    new, reference = (edited, frame) if side == "new" else (frame, edited)
    outcome = check(new, reference)
    assert not outcome.ok and len(outcome.differing) == 1 and f"({column})" in outcome.differing[0]
    assert f"; 1 differing: host=random_v3/dataset=diabetes/seed=0/variant=oa_only ({column})" in outcome.line()


def test_timings_are_not_compared_and_one_sided_columns_are_named(finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    assert set(agg.COLUMNS) & NOT_COMPARED == {c for c in agg.COLUMNS if "seconds" in c or "time" in c}
    timed = frame.assign(**{c: 7.0 for c in NOT_COMPARED})
    assert check(timed, frame).ok
    outcome = check(frame.drop(columns=["crps"]), frame.assign(extra_score=1.0))
    assert not outcome.ok and outcome.one_sided == ("crps (reference only)", "extra_score (reference only)")
    assert "2 columns in one file only: crps (reference only), extra_score (reference only)" in outcome.line()


def test_a_subset_is_compared_as_such_unless_every_row_is_required(finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    doubled = pd.concat([frame, frame.assign(seed=1)], ignore_index=True)
    outcome = check(frame, doubled)
    assert outcome.ok and (outcome.within, outcome.compared) == (2, 2)
    assert "subset: 2 of the reference's 4 rows ran" in outcome.line()
    reference = read_reference(_csv(tmp_path, doubled), require_all=True)
    strict = check(frame, reference)
    assert not strict.ok and "2 missing: host=random_v3/dataset=diabetes/seed=1/variant=baseline" in strict.line()


def _csv(tmp_path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(tmp_path / "ref.csv", index=False)
    return tmp_path / "ref.csv"


def test_the_named_reference_is_read_from_the_working_tree_or_the_commit_named(hydra_compose, finished, tmp_path):
    """An uncommitted edit of the reference counts unless a commit is named; the line says which."""
    frame = reference_frame(tmp_path, finished[1])
    csv = _csv(tmp_path, frame)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", csv.name], ["commit", "-q", "-m", "reference"]):
        subprocess.run([*git, *args], check=True)
    frame.assign(nll=frame["nll"] + 1).to_csv(csv, index=False)  # uncommitted edit
    tree = reference_of(hydra_compose(overrides=[f"reference={csv}"]), ROOT)
    head = reference_of(hydra_compose(overrides=[f"reference={csv}", "reference_commit=HEAD"]), ROOT)
    assert tree.frame["nll"].tolist() == (frame["nll"] + 1).tolist() and tree.source.endswith("(working tree)")
    assert head.frame["nll"].tolist() == frame["nll"].tolist() and " at HEAD (" in head.source
    assert not check(frame, tree).ok and check(frame, head).ok
    assert f"vs {head.source};" in check(frame, head).line()


def test_a_reference_that_is_not_a_results_table_is_refused_when_read(hydra_compose, finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    bad = {
        "repeated.csv": (pd.concat([frame, frame.iloc[:1]]), "lists 1 units twice, e.g. host=random_v3"),
        "nokey.csv": (frame.drop(columns=["variant"]), r"lacks the columns \['variant'\]"),
        "text.csv": (frame.assign(nll="abc"), "column 'nll' holds text where numbers belong"),
        "badseed.csv": (frame.assign(seed=0.5), "has a seed that is not an integer"),
    }
    for name, (table, message) in bad.items():
        table.to_csv(tmp_path / name, index=False)
        with pytest.raises(RunnerError, match=message):
            read_reference(tmp_path / name)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(RunnerError, match="is not a readable CSV"):
        read_reference(tmp_path / "empty.csv")
    with pytest.raises(RunnerError, match="reference_commit=HEAD needs reference="):
        reference_of(hydra_compose(overrides=["reference_commit=HEAD"]), ROOT)


def test_rows_recomputed_from_changed_inputs_are_listed_not_failed_and_machines_named(finished, tmp_path):
    """A host change on purpose: rows whose host file differs from the reference's are listed as
    recomputed from changed inputs; the same numbers under the same inputs must still agree."""
    frame = reference_frame(tmp_path, finished[1])
    moved = frame.assign(host_digest="another", rmse=frame["rmse"] * 1.01)
    outcome = check(moved, frame)
    assert outcome.ok and not outcome.differing
    assert "2 recomputed from changed inputs: host=random_v3/dataset=diabetes/seed=0/variant=baseline" in outcome.line()
    assert not check(frame.assign(rmse=frame["rmse"] * 1.01), frame).ok  # same inputs: a failure
    assert f"reference computed on {frame['machine'].iloc[0]}; this run on {frame['machine'].iloc[0]}" in outcome.line()
    assert "; BLAS " in frame["machine"].iloc[0] and "; torch " in frame["machine"].iloc[0]


def test_a_reference_commit_without_git_on_the_path_is_refused(tmp_path, monkeypatch):
    """Without git, reference_commit=HEAD used to read the working tree as if outside a checkout and
    report the run reproduced even where HEAD's file differs."""
    csv = tmp_path / "retrofit_rmse.csv"
    csv.write_text("host,dataset,seed,variant\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no_git_here"))
    with pytest.raises(
        RunnerError, match=r"reference_commit=HEAD needs git, which is not on PATH; .*reference_commit=null"
    ):
        read_reference(csv, "HEAD")


@pytest.mark.parametrize(
    "commit, why", [("--output=out", "starts with '-', which git reads as an option"), ("", "is empty")]
)
def test_a_reference_commit_that_git_would_read_as_an_option_is_refused_and_writes_nothing(tmp_path, commit, why):
    """reference_commit=--output=<file> had `git show` write its output to a file of the config's choosing."""
    (tmp_path / "out:.").mkdir()  # where `git show --output=out:./retrofit_rmse.csv` would write
    with pytest.raises(RunnerError) as err:
        read_reference(tmp_path / "retrofit_rmse.csv", commit)
    assert one_line(err).startswith(f"reference_commit={commit!r} {why}"), str(err.value)
    assert str(err.value).endswith("name a commit (HEAD, a hash or a tag), or null for the working tree")
    assert list((tmp_path / "out:.").iterdir()) == []


def test_a_gpu_unit_is_equal_within_1e5_within_its_hosts_floor_or_it_differs():
    """`across_devices`: 1e-5 relative is equal; an RMSE moved by 0.004 % on a host whose floor is
    0.01 % is within the floor; by 0.1 %, or a coverage change, it differs; a missing unit is said."""
    from test_run_files import record

    from retrofit.results.reproduction import across_devices

    cpu = pd.DataFrame([vars(record(d, "oa_only", 1.0)) for d in ("a", "b", "c", "d", "e")])
    gpu = cpu.copy()
    gpu.loc[0, "rmse"] *= 1 + 5e-6  # a: equal
    gpu.loc[1, ["rmse", "delta_rmse_pct"]] = [1.00004, 1.004]  # b: 4e-5 relative, 0.004 points
    gpu.loc[2, "rmse"] = 1.001  # c: 0.1 %
    gpu.loc[3, "coverage_90"] = 0.95  # d: not a column the floor speaks to
    verdicts = across_devices(gpu.drop(index=4), cpu, {"h": 0.01}).set_index("unit")
    assert verdicts["verdict"].tolist() == ["equal", "within floor", "differs", "differs", "only reference"]
    assert verdicts["columns"].tolist()[2:4] == ["rmse", "coverage_90"]
    assert across_devices(gpu, cpu, {})["verdict"].tolist()[1] == "differs"  # no floor: 1e-5 only
