"""How a command ends when Hydra is in the way (`retrofit.jobs.exits`): a config that does not
compose (an unknown key, named with the closest one; a bad value; an unknown option; a new key
merged into a mapping; a `!!python` tag) is one line and exit status 1, never a traceback; Ctrl-C
is `interrupted`, exit 130. Each command runs as a subprocess, as a user runs it."""

import os
import shlex
import signal
import subprocess
import sys
import threading

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from processes import ROOT, run_entry_point, run_python

from retrofit.jobs.exits import INTERRUPTED, _said


def one_line_error(out: subprocess.CompletedProcess) -> str:
    """The one line a refused command writes to stderr (asserting there is nothing else)."""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-3000:]
    return lines[0]


CONFIG_ERRORS = [
    ("ablation", ["n_estimatorz=4"], "error: n_estimatorz is not a key of this config (no key of this config is close"),
    ("ablation", ["n_nullz=[2]"], "error: n_nullz is not a key of this config (did you mean n_nulls?)"),
    ("ablation", ["seed=abc"], "error: Error merging override seed=abc"),
    ("sweep", ["n_estimator=2"], "error: n_estimator is not a key of this config (did you mean n_estimators?)"),
    ("sweep", ["n_estimators=many"], "error: Error merging override n_estimators=many"),
    ("sweep", ["dataset=no_such_dataset"], "error: In 'sweep': Could not find 'dataset/no_such_dataset'"),
    (
        "sweep",
        ["dataset.max_rows=100"],
        "error: dataset.max_rows is not set by the dataset option selected; add it with '+dataset.max_rows=100'",
    ),
    ("scale_check", ["rounds=x"], "error: Error merging override rounds=x"),
    (
        "scale_check",
        ["arch_overrides={tabpfn_v3: {nlayers: 2}}"],
        "error: arch_overrides.tabpfn_v3 is a new key of the mapping arch_overrides, which an override merges into, "
        "not replaces (add it with '+arch_overrides.tabpfn_v3=...', or replace the whole mapping with "
        "'++arch_overrides={tabpfn_v3: {nlayers: 2}}')",
    ),
]
"""(job, overrides, the start of the one line it answers): an unknown key with and without a close one,
a key of the job's that the selected dataset leaves out (once answered "is not a key of this config
(did you mean dataset.max_rows?)", itself), a value of the wrong type, an unknown option and a new
key merged into a mapping (with the forms that work)."""


def test_the_override_that_adds_a_key_the_selected_dataset_leaves_out_composes(tmp_path):
    out = run_entry_point("sweep.py", "+dataset.max_rows=100", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 0 and "\n  max_rows: 100\n" in out.stdout, out.stderr[-3000:]


@pytest.mark.parametrize(
    ("job", "overrides", "message"), CONFIG_ERRORS, ids=[f"{job} {' '.join(o)}" for job, o, _ in CONFIG_ERRORS]
)
def test_a_config_that_does_not_compose_is_one_line(job, overrides, message, tmp_path):
    out = run_entry_point(f"{job}.py", *overrides, cwd=tmp_path)
    assert out.returncode == 1 and one_line_error(out).startswith(message)


HYDRA_REFUSALS = [
    (
        ["-m", "seed=0,1", "--cfg", "job"],
        "error: -m/--multirun and -c/--cfg each choose what Hydra does, and a command does one (keep one; "
        "to see the config of one job of a sweep, drop -m and give each swept key one value)",
    ),
    (["--info", "-r"], "error: -r/--run and -i/--info each choose what Hydra does, and a command does one (keep one)"),
    (["--resolve"], "error: --resolve resolves the config that --cfg prints (add --cfg job, or drop --resolve)"),
]
"""(a sweep's command line, the one line it answers) for what Hydra refuses with a traceback."""


@pytest.mark.parametrize(("argv", "message"), HYDRA_REFUSALS, ids=[" ".join(argv) for argv, _ in HYDRA_REFUSALS])
def test_a_command_line_hydra_refuses_with_a_traceback_is_one_line(argv, message, tmp_path):
    out = run_entry_point("sweep.py", *argv, cwd=tmp_path)
    assert out.returncode == 1 and one_line_error(out) == message and out.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing run, nothing written
    alone = run_entry_point("sweep.py", *argv[-2:], cwd=tmp_path) if argv[-1] == "job" else None
    assert alone is None or (alone.returncode == 0 and "seed: 0" in alone.stdout)  # --cfg job alone still prints


@pytest.mark.parametrize("value", ["sale price!", "a b#c", 'it\'s "net" price!', "~/my data.csv"])
def test_the_quoting_hint_quotes_the_whole_value_and_parses_back_to_it(value):
    """A column name with a space was cut at the space in the hint ('dataset.target="sale"'); the
    hint now quotes the whole value, for the shell and for Hydra, and parses back to it."""
    override = f"dataset.target={value}"
    with pytest.raises(HydraException) as err:
        OverridesParser.create().parse_overrides([override])
    said = _said(err.value, [])
    hint = said.removeprefix(f"{override}: Hydra's override grammar does not take ").split("quote the value, ")[1]
    (argument,) = shlex.split(hint.removesuffix(" (a path's ~ is then your home directory)"))
    assert OverridesParser.create().parse_overrides([argument])[0].value() == value
    assert ("(a path's ~" in said) == ("~" in value) and "\n" not in said


@pytest.mark.parametrize(
    "key", ["results_dir", "cache_dir", "hydra.run.dir", "dataset.path", "host.path"], ids=lambda key: key
)
def test_a_path_with_a_name_too_long_for_the_file_system_is_one_line(tmp_path, key):
    """A name over 255 bytes ended in OSError "File name too long" tracebacks, wherever it was first looked at."""
    long = tmp_path / ("a" * 300)
    extra = {"dataset.path": ["dataset=csv", "dataset.target=y"], "host.path": ["host=checkpoint"]}.get(key, [])
    out = run_entry_point("sweep.py", *extra, f"{key}={long}", cwd=tmp_path)
    assert out.returncode == 1 and one_line_error(out).startswith(f"error: {str(long)[:120]}... ("), out.stderr
    fix = "a name in this path is longer than its file system takes (255 bytes a name, 4096 a path, on most)"
    assert one_line_error(out).endswith(f": {fix}; give a shorter one")


@pytest.mark.parametrize("job", ["sweep.py", "ablation.py"])
def test_a_work_bound_that_is_no_number_is_said_before_hydra_writes_anything(tmp_path, job):
    """RETROFIT_MAX_WORK=nan was refused only at the first fit, after Hydra's run folder and the model load."""
    out = run_entry_point(job, cwd=tmp_path, RETROFIT_MAX_WORK="nan")
    assert out.returncode == 1
    assert (
        one_line_error(out)
        == "error: RETROFIT_MAX_WORK='nan' must be a positive number of work units, e.g. RETROFIT_MAX_WORK=5e9"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_python_tag_is_one_line_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "evil.yaml").write_text(
        f'name: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    out = run_python("-m", "retrofit", "ablation", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "+dataset=evil")
    assert out.returncode == 1 and not marker.exists()
    assert one_line_error(out).startswith("error: could not determine a constructor for the tag 'tag:yaml.org,2002:")


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
