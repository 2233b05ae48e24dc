"""The experiments' committed files in results/ are written only by their make targets' default runs."""

from pathlib import Path

import pandas as pd
import pytest
from processes import run_entry_point

from retrofit.audit.run import audit_summary
from retrofit.errors import RunnerError
from retrofit.runner.guard import RECORD_DIR, check_record_outputs

ROOT = Path(__file__).resolve().parents[1]


def test_an_overridden_run_aimed_at_the_record_is_refused_naming_file_and_overrides(tmp_path):
    record = tmp_path / "results"
    with pytest.raises(RunnerError, match=r"audit\.csv is the committed record.*'host=checkpoint'"):
        check_record_outputs([record / "audit.csv"], ["host=checkpoint", "log_level=INFO"], record_dir=record)


@pytest.mark.parametrize(
    ("paths", "overrides"),
    [
        (["results/audit.csv"], []),  # the make target's own run: no overrides
        (["results/audit.csv"], ["log_level=INFO", "plot_only=true"]),  # what is printed or redrawn only
        (["outputs/audit.csv"], ["host=checkpoint"]),  # an overridden run written elsewhere
    ],
)
def test_default_runs_and_runs_written_elsewhere_pass(tmp_path, paths, overrides):
    check_record_outputs([tmp_path / p for p in paths], overrides, record_dir=tmp_path / "results")


def test_an_entry_point_refuses_before_any_work_and_leaves_the_record_alone():
    record = RECORD_DIR / "tau_sweep.csv"
    before = record.read_bytes()
    out = run_entry_point("tau_sweep.py", "seeds=[0]", "c_values=[0.01]", "datasets=[diabetes]", cwd=ROOT)
    try:
        assert out.returncode != 0
        assert "is the committed record" in out.stderr + out.stdout
    finally:
        if record.read_bytes() != before:  # a broken guard must not leave the record changed
            record.write_bytes(before)
            pytest.fail("tau_sweep.py rewrote the committed results/tau_sweep.csv")


def test_audit_summary_is_the_largest_relative_change_and_names_refusals():
    table = pd.DataFrame(
        {
            "host": ["h"] * 4,
            "variant": ["v", "v", "w", "w"],
            "inserted_at": ["input"] * 4,
            "null_kind": ["rows"] * 4,
            "linf_pred": [1.0, 3.0, float("nan"), float("nan")],
            "max_abs_pred": [10.0, 10.0, float("nan"), float("nan")],
            "status": ["measured", "measured", "refused", "refused"],
        }
    )
    summary = audit_summary(table)
    assert summary.loc[("h", "v"), ("input", "rows")] == "0.3"
    assert summary.loc[("h", "w"), ("input", "rows")] == "refused"
