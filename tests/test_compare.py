"""Comparing two results files unit by unit: the largest difference per column and where, mean ΔRMSE
per variant in each file, units found in one file only."""

from pathlib import Path

import pandas as pd
import pytest
from processes import run_entry_point

from retrofit.errors import RunnerError
from retrofit.runner.compare import compare

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


def test_files_that_are_not_results_are_refused():
    with pytest.raises(RunnerError, match=r"B lacks the columns \['variant'\]"):
        compare(results(), results().drop(columns="variant"))
    with pytest.raises(RunnerError, match="A lists a unit twice"):
        compare(pd.concat([results(), results()]), results())


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
