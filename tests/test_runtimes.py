"""`retrofit.runtimes`: each make target's measured time, and which file it goes to."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrofit import runtimes
from retrofit.runtimes import read

ROOT = Path(__file__).resolve().parents[1]


def test_a_successful_command_is_recorded_with_its_cpu_time(tmp_path):
    path = tmp_path / "times" / "command_times.csv"
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    assert runtimes.main(["record", "demo", "--to", str(path), "--", sys.executable, "-c", burn]) == 0
    (row,) = read(path).values()
    assert row.target == "demo"
    assert row.cpu_s >= 0.3  # the child's CPU time is counted, not the parent's
    assert row.wall_s >= row.cpu_s * 0.9


def test_a_failed_command_records_nothing_and_passes_its_status_on(tmp_path):
    path = tmp_path / "command_times.csv"
    assert runtimes.main(["record", "demo", "--to", str(path), "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert not path.exists()


def test_a_rerun_replaces_only_its_own_row(tmp_path):
    path = tmp_path / "command_times.csv"
    for target in ("a", "b", "a"):
        assert runtimes.main(["record", target, "--to", str(path), "--", sys.executable, "-c", "pass"]) == 0
    assert sorted(read(path)) == ["a", "b"]


def test_the_install_is_recorded_from_its_start(tmp_path):
    path = tmp_path / "command_times.csv"
    assert runtimes.main(["add", "install", "--to", str(path), "--since", str(time.time() - 90)]) == 0
    row = read(path)["install"]
    assert 90 <= row.wall_s < 120 and row.cpu_s != row.cpu_s  # NaN: not measured


def test_record_needs_a_destination(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        runtimes.main(["record", "demo", "--", sys.executable, "-c", "pass"])
    assert exit_info.value.code == 2 and "--to" in capsys.readouterr().err


def _recipes() -> dict[str, str]:
    """Target -> its recipe as make expands it (`make -n`), for every target `make help` lists."""
    text = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-zA-Z0-9_-]+):.*## ", text, flags=re.M)
    recipes = {}
    for target in targets:
        out = subprocess.run(
            ["make", "-n", "-C", str(ROOT), target, "A=a.csv", "B=b.csv", f"VENV={ROOT / '.venv'}"],
            capture_output=True,
            text=True,
            check=True,
        )
        recipes[target] = out.stdout
    return recipes


def test_only_record_targets_may_touch_tracked_files():
    """Every target that is not a record target times itself into the untracked outputs/ and runs
    without RETROFIT_RECORD, so it can neither rewrite results/ nor the README; the record targets
    are exactly the ones that carry it, and each times itself into results/ except `tables`, whose
    renders of unchanged CSVs change nothing (`tables-time` records its time, as `quick-time` `quick`'s)."""
    ignored = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "-q", "outputs/command_times.csv"], check=False
    ).returncode
    assert ignored == 0, "outputs/ must be ignored by git"
    recipes = _recipes()
    record = {target for target, recipe in recipes.items() if "RETROFIT_RECORD=1" in recipe}
    for target, recipe in recipes.items():
        if target == "tables":
            assert "record tables --to outputs/command_times.csv" in recipe, target
        elif target in record:
            assert "--to results/command_times.csv" in recipe, target
        else:
            assert "results/command_times.csv" not in recipe.replace("outputs/command_times.csv", ""), target
            assert "README" not in recipe, target
    assert {"retrofit", "audit", "scale-check", "host-quality", "tables"} <= record
    assert "record tables --to results/command_times.csv" in recipes["tables-time"]
    assert not record & {"install", "test", "test-fast", "lint", "diff", "compare", "bench", "help", "clean"}
