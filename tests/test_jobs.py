"""Every entry starts one way (`retrofit.jobs.launch`): what cannot start, does not compose or is
interrupted ends in one line and a non-zero exit, never a traceback; `python -m retrofit` runs the
same jobs and lists them. Each entry runs as a subprocess, as a user runs it."""

import os
import signal
import subprocess
import sys
import threading
import tomllib

import pandas as pd
import pytest
from processes import ROOT, run_entry_point, run_python

from retrofit.jobs import USAGE, declared_configs, job_names
from retrofit.jobs.exits import INTERRUPTED


def one_line_error(out: subprocess.CompletedProcess) -> str:
    """The one line a refused command writes to stderr (asserting there is nothing else)."""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-3000:]
    return lines[0]


def test_a_home_directory_that_is_a_file_is_one_line_before_any_import(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    out = run_entry_point("exactness.py", cwd=tmp_path, HOME=str(home), SKB_DATA_DIRECTORY="")
    assert out.returncode == USAGE
    assert one_line_error(out) == f"error: HOME={home} is not a directory (set HOME to a writable directory)"
    out = run_python("-m", "retrofit", "audit", cwd=tmp_path, SKB_DATA_DIRECTORY=str(home / "data"))
    assert out.returncode == USAGE and one_line_error(out).startswith(f"error: SKB_DATA_DIRECTORY={home / 'data'} (")


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["n_estimatorz=4"], "error: n_estimatorz is not a key of this config (no key of this config is close"),
        (["n_nullz=[2]"], "error: n_nullz is not a key of this config (did you mean n_nulls?)"),
        (["seed=abc"], "error: Error merging override seed=abc"),
        (["+n_estimatorz=4"], "error: configs/ablation.yaml: bad key 'n_estimatorz'"),
        (["output_csv=results/ablation.csv"], "is in the committed record"),
    ],
    ids=["unknown-key", "misspelt-key", "bad-value", "added-key", "record-output"],
)
def test_a_bad_override_is_one_line(tmp_path, overrides, message):
    out = run_entry_point("ablation.py", *overrides, cwd=ROOT)
    assert out.returncode == 1 and message in one_line_error(out)


def test_a_python_tag_is_one_line_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "evil.yaml").write_text(
        f'name: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    out = run_python("-m", "retrofit", "ablation", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "+dataset=evil")
    assert out.returncode == 1 and not marker.exists()
    assert one_line_error(out).startswith("error: could not determine a constructor for the tag 'tag:yaml.org,2002:")


def test_an_unknown_job_is_one_line_naming_the_jobs():
    out = run_python("-m", "retrofit", "exactnes")
    assert out.returncode == USAGE and "(did you mean exactness? one of ablation, aggregate, " in one_line_error(out)


def test_retrofit_alone_lists_every_job_with_one_line_and_runs_it(tmp_path):
    """`python -m retrofit` and the console script's function (`[project.scripts]` names it) list
    every job, the sweep as `sweep`, each with one line, and the root configs another job runs."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"retrofit": "retrofit.__main__:main"}
    listed = run_python("-m", "retrofit")
    by_script = run_python("-c", "import sys; sys.argv = ['retrofit']; from retrofit.__main__ import main; main()")
    assert listed.returncode == by_script.returncode == 0 and listed.stdout == by_script.stdout, listed.stderr
    jobs_part, others_part = listed.stdout.split("\nroot configs run by another job:\n")
    described = dict(line.split(maxsplit=1) for line in jobs_part.splitlines()[2:])
    assert sorted(described) == job_names() and "sweep" in described and "config" not in described
    assert all(len(line) > 20 and "\n" not in line for line in described.values())
    others = dict(line.split(maxsplit=1) for line in others_part.splitlines())
    assert others == {"preset_selection": "retrofit host_quality --config-name preset_selection"}
    assert {*declared_configs(), *others} == {path.stem for path in (ROOT / "configs").glob("*.yaml")}
    csv, md = tmp_path / "ablation.csv", tmp_path / "ablation.md"
    tiny = ["d_model=16", "n_heads=2", "d_ffn=32", "n_old=8", "n_nulls=[2]", "batch=1"]
    out = run_python("-m", "retrofit", "ablation", *tiny, f"output_csv={csv}", f"output_md={md}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert set(pd.read_csv(csv).n_null) == {2} and "| otransformer |" in md.read_text()


def test_compare_runs_as_a_job_and_from_its_entry_point_with_two_bare_paths(tmp_path):
    record = ROOT / "results" / "retrofit_rmse.csv"
    as_job = run_python("-m", "retrofit", "compare", f"a={record}", f"b={record}", cwd=tmp_path)
    bare = run_entry_point("compare.py", str(record), str(record), cwd=tmp_path)
    assert as_job.returncode == bare.returncode == 0, as_job.stderr[-3000:] + bare.stderr[-3000:]
    assert as_job.stdout == bare.stdout and f"A = {record}" in as_job.stdout and "rmse" in as_job.stdout
    missing = run_python("-m", "retrofit", "compare", f"a={tmp_path / 'none.csv'}", f"b={record}", cwd=tmp_path)
    assert missing.returncode == 1 and "none.csv does not exist" in one_line_error(missing)


@pytest.mark.slow
def test_ctrl_c_is_interrupted_exit_130(tmp_path):
    """SIGINT once the job computes (its progress bar names the first grid point; the whole grid
    takes minutes): `interrupted`, exit 130, no traceback, no table."""
    command = [sys.executable, str(ROOT / "experiments" / "exactness.py"), f"output_csv={tmp_path / 'e.csv'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    job = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a shell
    )
    seen, started = [], threading.Event()

    def read() -> None:
        for char in iter(lambda: job.stderr.read(1), ""):
            seen.append(char)
            if "exactness B=" in "".join(seen[-40:]):
                started.set()
        started.set()  # the job ended: nothing more to wait for

    reader = threading.Thread(target=read)
    reader.start()
    started.wait()
    assert job.poll() is None, "".join(seen)[-3000:]
    job.send_signal(signal.SIGINT)
    job.wait(timeout=600)
    reader.join()
    stderr = "".join(seen)
    assert job.returncode == INTERRUPTED, stderr[-3000:]
    assert "interrupted" in stderr and "Traceback" not in stderr and not (tmp_path / "e.csv").exists()
