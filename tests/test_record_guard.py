"""`retrofit.record_guard`: an output a job cannot write is refused in one line before any work."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrofit.errors import RunnerError
from retrofit.record_guard import writable_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "output, message",
    [
        ("", "error: output is empty; give a file, e.g. output=outputs/<name>.csv"),
        ("{tmp}", "error: output={tmp} is a folder; give a file in it, e.g. output={tmp}/<name>.csv"),
        ("{tmp}/a_file/x.csv", "error: output={tmp}/a_file is not a directory; choose another output"),
    ],
    ids=["empty", "folder", "under-a-file"],
)
def test_sink_mass_refuses_an_output_it_cannot_write_before_any_work(tmp_path, output, message):
    """`sink_mass output=` (empty) or a folder used to run the whole job and end in a traceback."""
    (tmp_path / "a_file").write_text("")
    out = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "sink_mass.py"), f"output={output.format(tmp=tmp_path)}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(message.format(tmp=tmp_path)), out.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_output_file_is_refused(tmp_path):
    locked = tmp_path / "sink_mass.csv"
    locked.write_text("")
    locked.chmod(0o444)
    with pytest.raises(RunnerError, match=rf"output={locked} cannot be written \(Permission denied\)"):
        writable_file(locked, "output")
