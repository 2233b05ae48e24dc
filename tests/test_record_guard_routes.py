"""The experiments' committed files in results/ are written only by their make targets (RETROFIT_RECORD=1)."""

from pathlib import Path

import pandas as pd
import pytest
from processes import run_entry_point

from retrofit.audit.run import audit_summary
from retrofit.errors import RunnerError
from retrofit.record_guard import RECORD_DIR, RECORD_ENV, check_record_outputs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_record_env(monkeypatch):
    monkeypatch.delenv(RECORD_ENV, raising=False)


def routes_into(record: Path, tmp_path: Path) -> list[Path]:
    """Every way of naming a file in `record`: directly, through `..`, through a symlink to it."""
    (tmp_path / "link").symlink_to(record, target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    return [record / "audit.csv", tmp_path / "elsewhere" / ".." / "results" / "audit.csv", tmp_path / "link" / "a.csv"]


def test_every_route_into_the_record_is_refused_without_the_record_variable(tmp_path, no_record_env):
    record = tmp_path / "results"
    record.mkdir()
    for path in routes_into(record, tmp_path):
        with pytest.raises(RunnerError, match=rf"is in the committed record .*\({RECORD_ENV}=1\)"):
            check_record_outputs([tmp_path / "outputs" / "x.csv", path], record_dir=record)
    check_record_outputs([tmp_path / "outputs" / "x.csv"], record_dir=record)  # elsewhere: fine


def test_the_record_variable_alone_opens_the_record(tmp_path, monkeypatch):
    record = tmp_path / "results"
    record.mkdir()
    routes = routes_into(record, tmp_path)
    for value in ("0", "yes", ""):
        monkeypatch.setenv(RECORD_ENV, value)
        with pytest.raises(RunnerError, match="is in the committed record"):
            check_record_outputs(routes[:1], record_dir=record)
    monkeypatch.setenv(RECORD_ENV, "1")
    check_record_outputs(routes, record_dir=record)


def test_an_entry_point_refuses_before_any_work_and_leaves_the_record_alone(tmp_path):
    record = RECORD_DIR / "tau_sweep.csv"
    before = record.read_bytes()
    settings = ["seeds=[0]", "c_values=[0.01]", "datasets=[diabetes]", f"hydra.run.dir={tmp_path}"]
    out = run_entry_point("tau_sweep.py", *settings, cwd=ROOT, **{RECORD_ENV: "0"})
    try:
        assert out.returncode != 0
        assert "is in the committed record" in out.stderr + out.stdout
    finally:
        if record.read_bytes() != before:  # a broken guard must not leave the record changed
            record.write_bytes(before)
            pytest.fail("tau_sweep.py rewrote the committed results/tau_sweep.csv")


def test_a_copy_of_a_config_through_its_own_config_dir_cannot_write_the_record(tmp_path):
    """`-cd <dir> -cn <name>`: a copy of configs/ablation.yaml with one value changed and no override
    on the command line is still refused (the guard does not read the command line)."""
    record = RECORD_DIR / "ablation.csv"
    before = record.read_bytes()
    copied = (ROOT / "configs" / "ablation.yaml").read_text().replace("bias_std: 0.5", "bias_std: 0.7")
    (tmp_path / "mine.yaml").write_text(copied)
    out = run_entry_point("ablation.py", "-cd", str(tmp_path), "-cn", "mine", cwd=ROOT, **{RECORD_ENV: "0"})
    try:
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert "ablation.csv is in the committed record" in out.stderr, out.stderr
    finally:
        if record.read_bytes() != before:
            record.write_bytes(before)
            pytest.fail("ablation.py -cd -cn rewrote the committed results/ablation.csv")


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
