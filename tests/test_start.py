"""How every job starts (`retrofit.jobs.start`): a key added on the command line (`+key=value`,
which Hydra leaves unchecked) and an output in the committed record are each one line, before any
work. Each command runs as a subprocess, as a user runs it."""

import pytest
from processes import ROOT, run_entry_point


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["+n_estimatorz=4"], "error: configs/ablation.yaml: bad key 'n_estimatorz'"),
        (["output_csv=results/ablation.csv"], "is in the committed record"),
    ],
    ids=["added-key", "record-output"],
)
def test_a_refused_start_is_one_line_before_any_work(tmp_path, overrides, message):
    out = run_entry_point("ablation.py", *overrides, f"hydra.run.dir={tmp_path}", cwd=ROOT)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert message in lines[0]
