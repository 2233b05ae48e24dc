"""`retrofit.runtimes`: each make target's measured time, and the README table rendered from it."""

import math
import sys

import pytest

from retrofit import runtimes
from retrofit.runtimes import END, START, Runtime, read, render_readme, table


@pytest.fixture
def record(tmp_path, monkeypatch):
    """The record and a README with the markers, both in `tmp_path`."""
    path, readme = tmp_path / "results" / "command_times.csv", tmp_path / "README.md"
    readme.write_text(f"intro\n\n{START}\nstale\n{END}\n\nrest\n")
    monkeypatch.setattr(runtimes, "RECORD", path)
    monkeypatch.setattr(runtimes, "README", readme)
    return path, readme


def test_a_successful_command_is_recorded_with_its_cpu_time(record):
    path, readme = record
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    assert runtimes.main(["record", "demo", "--", sys.executable, "-c", burn]) == 0
    (row,) = read(path).values()
    assert row.target == "demo"
    assert row.cpu_s >= 0.3  # the child's CPU time is counted, not the parent's
    assert row.wall_s >= row.cpu_s * 0.9
    text = readme.read_text()
    assert "stale" not in text and "| `make demo` |" in text
    assert text.startswith("intro\n") and text.endswith("\nrest\n")


def test_a_failed_command_records_nothing_and_passes_its_status_on(record):
    path, readme = record
    assert runtimes.main(["record", "demo", "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert not path.exists()
    assert "stale" in readme.read_text()


def test_a_rerun_replaces_only_its_own_row(record):
    path, _ = record
    for target in ("a", "b", "a"):
        assert runtimes.main(["record", target, "--", sys.executable, "-c", "pass"]) == 0
    assert sorted(read(path)) == ["a", "b"]


def test_the_install_is_recorded_from_its_start(record):
    import time

    path, _ = record
    assert runtimes.main(["add", "install", "--since", str(time.time() - 90)]) == 0
    row = read(path)["install"]
    assert 90 <= row.wall_s < 120 and row.cpu_s != row.cpu_s  # NaN: not measured
    assert "| `make install` | 1 min 3" in table(read(path))


def test_a_readme_without_markers_is_an_error():
    with pytest.raises(ValueError, match="command-times"):
        render_readme("no markers here", {})


def test_the_committed_readme_table_is_the_committed_record():
    """The README's table is exactly what the record renders to: no number is typed in by hand."""
    text = runtimes.README.read_text()
    recorded = read(runtimes.RECORD)
    assert recorded, "results/command_times.csv is empty"
    assert render_readme(text, recorded) == text
    assert all(isinstance(rt, Runtime) and rt.wall_s > 0 for rt in recorded.values())


def test_the_readme_is_rendered_from_the_rounded_record(tmp_path):
    """A wall time that rounds differently before and after the record's one decimal (129.46 s:
    2 min 09 s unrounded, 129.5 s -> 2 min 10 s) renders as the record says."""
    readme = tmp_path / "README.md"
    readme.write_text("<!-- command-times:start -->\n<!-- command-times:end -->\n")
    record = tmp_path / "command_times.csv"
    runtime = runtimes.Runtime("install", 129.46, math.nan, 2, 1.0, 1.0, "abc1234", "2026-12-02 00:00", "install")
    runtimes.update(runtime, record, readme)
    assert runtimes.render_readme(readme.read_text(), runtimes.read(record)) == readme.read_text()
    assert "2 min 10 s" in readme.read_text()
