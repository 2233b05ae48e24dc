"""Comparing two results files unit by unit: the largest difference per column and where, mean ΔRMSE
per variant in each file, units found in one file only."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import run_entry_point

from retrofit.errors import RunnerError
from retrofit.results.compare import check, compare

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
    comparison = compare(a, b)
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
    comparison = compare(a, b)
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
        compare(results(), results().drop(columns="variant"))
    with pytest.raises(RunnerError, match="A lists 4 units twice"):
        compare(pd.concat([results(), results()]), results())


def test_differences_within_the_tolerances_agree_and_changed_inputs_are_listed_not_differing():
    a, b = results().assign(host_digest="h1"), results().assign(host_digest="h1")
    a["rmse"] *= 1 + 5e-6  # last-bit rounding of another CPU: within 1e-5 relative
    a.loc[1, "delta_rmse_pct"] += 5e-4  # within 1e-3 percentage points
    same = compare(a, b)
    assert not same.differing and same.columns["within tolerance"].all()
    a.loc[3, "rmse"] *= 1.01
    assert compare(a, b).differing == ("host=h/dataset=b/seed=0/variant=oa_only (rmse)",)
    moved = compare(a.assign(host_digest=["h1", "h1", "h2", "h2"]), b)  # dataset b ran on another host file
    assert not moved.differing
    assert moved.changed_inputs == (
        "host=h/dataset=b/seed=0/variant=baseline",
        "host=h/dataset=b/seed=0/variant=oa_only",
    )
    assert "recomputed from changed inputs (host or data): host=h/dataset=b" in moved.text()


def test_timings_are_never_compared():
    a, b = results().assign(predict_seconds=1.0), results().assign(predict_seconds=9.0)
    comparison = compare(a, b)
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
    out = run_entry_point("compare.py", str(path), str(good), cwd=ROOT)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert re.search(message, out.stderr) and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "| rmse " not in out.stdout


def test_the_command_prints_the_tables(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    results().to_csv(a, index=False)
    results().assign(rmse=lambda f: f["rmse"] * 2).to_csv(b, index=False)
    out = run_entry_point("compare.py", str(a), str(b), cwd=ROOT)
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
    comparison = compare(changed, record)
    columns = comparison.columns.set_index("column")
    assert comparison.matched == len(record) and not comparison.only_a and not comparison.only_b
    assert columns.loc["nll", "max |A − B|"] == pytest.approx(0.5)
    assert "dataset=wage" in columns.loc["nll", "where"] and "variant=full_o" in columns.loc["nll", "where"]
    assert columns.loc["rmse", "max |A − B|"] == 0.0 and columns.loc["arm_extra", "max |A − B|"] == 0.0


def test_a_gpu_unit_is_equal_within_1e5_within_its_hosts_floor_or_it_differs():
    """`across_devices`: 1e-5 relative is equal; an RMSE moved by 0.004 % on a host whose floor is
    0.01 % is within the floor; by 0.1 %, or a coverage change, it differs; a missing unit is said."""
    from test_aggregate import record

    from retrofit.results.compare import across_devices

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
