"""The entry points as a hostile user meets them (`retrofit.jobs.launch`, `retrofit.jobs.preflight`):
commands aimed at the committed record refused and the record left alone, what Hydra writes checked
before it writes, one line for a config that does not compose, Ctrl-C, make arguments as data."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from processes import host_args, record_state, run_hydra
from test_sweep_config import searchpath_with

from retrofit.record_guard import RECORD_DIR, RECORD_ENV

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "experiments" / "sweep.py"


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, recording, message",
    [
        (["experiments/sweep.py", "+experiment=paper_table"], "0", "is in the committed record"),
        (["experiments/sweep.py", "-m", "seed=0,1"], "0", "is in the committed record"),
        (["experiments/sweep.py", "reference=results/retrofit_rmse.csv"], "1", "run make retrofit"),
        (["experiments/aggregate.py", "cache_dir=.no_such_cache"], "0", "is in the committed record"),
    ],
    ids=["single-paper-table", "sweep-without-record-variable", "single-with-record-variable", "aggregate"],
)
def test_commands_aimed_at_the_record_refuse_and_leave_it_alone(host, tmp_path, command, recording, message):
    """`dataset.target=nope` makes any run that got past the guard fail before writing, so a broken
    guard fails this test without touching results/."""
    before = record_state()
    out = run_hydra(
        *command,
        "results_dir=results",
        "dataset.target=nope",
        f"hydra.run.dir={tmp_path}",
        f"hydra.sweep.dir={tmp_path}",
        *host_args(host)[:3],
        **{RECORD_ENV: recording},
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert message in out.stderr, out.stderr
    assert record_state() == before


@pytest.mark.slow
def test_a_single_run_checks_its_own_rows_against_the_reference(host, tmp_path):
    """`reference=` takes effect on a single run too: the reproduction line, and a failure when the
    reference's nll for one of its units differs (the run's units come from the cache)."""
    common = [*host_args(host), "variant=oa_only", f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path}/h"]
    first = run_hydra("experiments/sweep.py", f"results_dir={tmp_path / 'a'}", *common)
    assert first.returncode == 0, first.stderr
    rows = pd.read_csv(tmp_path / "a" / "retrofit_rmse.csv")
    rows.to_csv(tmp_path / "same.csv", index=False)
    rows.assign(nll=rows["nll"] + 0.5).to_csv(tmp_path / "other.csv", index=False)
    same = run_hydra(
        "experiments/sweep.py", f"results_dir={tmp_path / 'b'}", f"reference={tmp_path / 'same.csv'}", *common
    )
    assert same.returncode == 0, same.stderr
    assert "reproduced: 2/2 rows within 1e-05" in same.stdout
    other = run_hydra(
        "experiments/sweep.py", f"results_dir={tmp_path / 'c'}", f"reference={tmp_path / 'other.csv'}", *common
    )
    assert other.returncode == 1 and "Traceback" not in other.stderr
    assert "error: not reproduced (reproduced: 0/2 rows" in other.stderr and "(nll)" in other.stderr


@pytest.mark.slow
def test_ctrl_c_under_the_basic_launcher_says_interrupted_and_exits_130(host, tmp_path):
    """SIGINT once the first unit is stored (a results file under `<cache_dir>/runs`, not the job
    check before): `interrupted`, exit 130, no traceback; the stored unit is
    kept for the next run."""
    runs = tmp_path / "cache" / "runs"
    # 40 cases of a tiny host (about 0.2 s each): the interrupt lands mid-sweep however fast the first one is stored
    command = [sys.executable, "experiments/sweep.py", "-m", "seed=range(0,40)", "variant=oa_only"]
    command += [f"cache_dir={tmp_path / 'cache'}", f"results_dir={tmp_path / 'r'}", f"hydra.sweep.dir={tmp_path / 'm'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    sweep = subprocess.Popen(
        [*command, *host_args(host)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        # as from a shell: a child inherits an ignored SIGINT (a test runner's worker may ignore it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while not list(runs.rglob("*.json")) and sweep.poll() is None:
        time.sleep(0.05)  # waits for the first stored unit (no assertion on time)
    assert sweep.poll() is None, "the sweep ended before the interrupt: give it more cases"
    sweep.send_signal(signal.SIGINT)
    stderr = sweep.communicate(timeout=600)[1]
    assert sweep.returncode == 130, stderr
    assert "interrupted: finished units are kept" in stderr and "Traceback" not in stderr
    assert list(runs.rglob("*.json"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["variant=evil"], "error: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object"),
        (["dataset=concrete"], "error: In 'sweep': Could not find 'dataset/concrete' Available options in 'dataset'"),
    ],
    ids=["python-tag-chosen-by-name", "unknown-option"],
)
def test_a_config_that_does_not_compose_is_one_line_from_the_entry_point(tmp_path, overrides, message):
    """Hydra composes these before the job runs, where it would print a stack trace; the entry point
    says them in one line, exit status 1, and the tagged YAML runs nothing (no marker file)."""
    marker = tmp_path / "ran"
    searchpath = searchpath_with(
        tmp_path / "s", {"evil": f'adapters: !!python/object/apply:os.system ["touch {marker}"]\n'}
    )
    command = [sys.executable, "experiments/sweep.py", *overrides, searchpath, f"results_dir={tmp_path / 'r'}"]
    out = subprocess.run(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[-1].startswith(message) and not marker.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize(
    "a",
    ['x.csv"; touch PWNED; echo "', "q`id>&2`.csv", "$(shell touch PWNED)", "$$(touch PWNED).csv"],
    ids=["quote-break", "backquote", "make-shell", "dollar-paren"],
)
def test_make_diff_hands_its_file_names_over_as_data(tmp_path, a):
    """`make diff A=<text>` passes A's text to the program untouched: no shell and no make function
    runs any part of it; the program names the file it could not find, character for character."""
    out = subprocess.run(
        ["make", "-C", str(ROOT), "-o", ".venv/.installed", "diff", f"A={a}", f"B={tmp_path / 'b.csv'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert out.returncode != 0
    assert not (tmp_path / "PWNED").exists() and not (ROOT / "PWNED").exists()
    assert "uid=" not in out.stdout + out.stderr
    assert f"error: A {a} does not exist" in out.stderr, out.stderr


def _tree(folder: Path) -> dict[str, int]:
    """Every file under `folder` (relative name -> mtime), to see that nothing was added or touched."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["hydra.job_logging.handlers.file.filename={record}/noise_floor.csv"],
            "hydra.job_logging.handlers.file.filename puts",
        ),
        (["hydra.run.dir={record}"], "hydra.run.dir puts Hydra's files at"),
        (["-m", "hydra.sweep.dir={record}/x"], "hydra.sweep.dir puts Hydra's files at"),
        (["-m", "hydra.sweep.dir={tmp}/s", "hydra.sweep.subdir=../../{up}/results"], "hydra.sweep.subdir puts"),
        (["+experiment=../../../../{tmp_rel}/evil"], "experiment=../../../../"),
        (["-m", "variant=oa_only,../evil"], "variant=oa_only,../evil: a config group option is a name, not a path"),
        (["results_dir="], "results_dir is empty; give a directory, e.g. results_dir=outputs/results"),
        (["hydra.run.dir="], "hydra.run.dir is empty; leave it at its default (under outputs/)"),
        (["-m", "hydra.sweep.dir="], "hydra.sweep.dir is empty; leave it at its default (under outputs/)"),
    ],
    ids=[
        "log-file",
        "run-dir",
        "sweep-dir",
        "sweep-subdir",
        "experiment-path",
        "variant-path",
        "empty-results-dir",
        "empty-run-dir",
        "empty-sweep-dir",
    ],
)
def test_no_override_makes_hydra_write_into_the_record(tmp_path, args, message):
    """Hydra writes its run folder, `.hydra/`, `multirun.yaml` and log files before the job checks
    anything: these overrides used to put them (or a log line) into the committed results/, or the
    sweep's five files into the current folder (`results_dir=`). Each is refused in one line, first
    (an empty results_dir by the job, so only Hydra's own folder under outputs/ exists)."""
    (tmp_path / "evil.yaml").write_text("# @package _global_\nhydra:\n  run:\n    dir: results/hx\n")
    fields = {
        "record": RECORD_DIR,
        "tmp": tmp_path,
        "up": "/".join([".."] * len(tmp_path.parts)) + str(ROOT),
        "tmp_rel": os.path.relpath(tmp_path, "/"),
    }
    before, cwd_before = _tree(RECORD_DIR), _tree(tmp_path)
    out = run_hydra(
        str(ROOT / "experiments" / "sweep.py"), *(a.format(**fields) for a in args), cwd=tmp_path, **{RECORD_ENV: "0"}
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and message in out.stderr, out.stderr
    assert _tree(RECORD_DIR) == before
    assert {name: t for name, t in _tree(tmp_path).items() if not name.startswith("outputs")} == cwd_before


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["hydra.sweep.dir={tmp}/sweep", "hydra.sweep.subdir=s${{seed}}", "seed=0,1"],
            "error: job 1 (seed=1 dataset.target=nope): hydra.sweep.subdir puts Hydra's files at {tmp}/sweep/s1, in",
        ),
        (
            ["hydra/launcher=submitit_local", "hydra.launcher.submitit_folder={record}/x/%j"],
            "error: hydra.launcher.submitit_folder puts Hydra's files at {record}/x, in the committed record",
        ),
        (
            ["hydra/launcher=joblib", "hydra.launcher.temp_folder={record}/x"],
            "error: hydra.launcher.temp_folder puts Hydra's files at {record}/x, in the committed record",
        ),
    ],
    ids=["job-folder-through-a-symlink", "submitit-folder", "joblib-temp-folder"],
)
def test_each_job_and_the_launcher_are_checked_before_anything_is_written(tmp_path, args, message):
    """A job's own folder (`s${seed}`, where `s1` is a symlink into the record) used to be checked
    for job 0 only, and a launcher's folder not at all (submitit's pickles and logs landed in
    results/); each is refused in one line and nothing is written anywhere (`dataset.target=nope`
    stops a run that got past the check before it writes)."""
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "s1").symlink_to(RECORD_DIR, target_is_directory=True)
    fields = {"record": RECORD_DIR, "tmp": tmp_path}
    before, cwd_before = _tree(RECORD_DIR), _tree(tmp_path)
    out = run_hydra(
        str(ROOT / "experiments" / "sweep.py"),
        "-m",
        *(a.format(**fields) for a in args),
        "dataset.target=nope",
        cwd=tmp_path,
        **{RECORD_ENV: "0"},
    )
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(message.format(**fields)), out.stderr
    assert _tree(RECORD_DIR) == before and _tree(tmp_path) == cwd_before


def test_a_config_dir_whose_config_its_own_configs_would_hide_is_refused(tmp_path):
    """`-cd <dir>` with a sweep.yaml setting n_estimators: 3 used to run with 8 (configs/sweep.yaml
    comes first on Hydra's search path), silently; a config of its own name takes effect (-cn)."""
    own = (ROOT / "configs" / "sweep.yaml").read_text().replace("n_estimators: 8 ", "n_estimators: 3 ")
    (tmp_path / "sweep.yaml").write_text(own)
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert (
        f"--config-dir {tmp_path}: its sweep.yaml would not be read, {ROOT / 'configs' / 'sweep.yaml'} comes first"
        in out.stderr
    )
    (tmp_path / "sweep.yaml").rename(tmp_path / "mine.yaml")
    out = run_hydra(
        str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), "-cn", "mine", "--cfg", "job", cwd=tmp_path
    )
    assert out.returncode == 0 and "\nn_estimators: 3\n" in out.stdout, out.stderr


def test_each_command_gets_a_hydra_folder_of_its_own(hydra_compose):
    """Two commands started in the same second used to share one run folder (its name was the time
    alone); it now ends in the process id, the same for every job of one command."""
    from hydra.core.utils import JobRuntime  # noqa: F401 - Hydra's resolvers (now) are registered on import

    cfg = hydra_compose(overrides=["hydra.job.name=sweep"])
    run_dir, sweep_dir = cfg.hydra.run.dir, cfg.hydra.sweep.dir
    assert run_dir.endswith(f"_{os.getpid()}") and sweep_dir.endswith(f"_{os.getpid()}")
    assert cfg.hydra.run.dir == run_dir  # cached: one folder per command


@pytest.mark.parametrize("override", ["~hydra.callbacks.check_writes", "hydra.callbacks={}", "hydra.callbacks=null"])
def test_the_check_of_what_hydra_writes_cannot_be_taken_away(tmp_path, override):
    """The callback that checks Hydra's writes (configs/hydra/default.yaml) is not removed from the
    command line, and a root config of one's own without it does not run."""
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), override, f"hydra.run.dir={RECORD_DIR}", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert f"error: {override}: hydra.callbacks are not changed from the command line" in out.stderr
    assert not (RECORD_DIR / ".hydra").exists()


@pytest.mark.parametrize(
    "root",
    [
        "defaults:\n  - sweep_schema\n  - paths: default\n  - _self_\n",
        (ROOT / "configs" / "sweep.yaml")
        .read_text()
        .replace("  callbacks:\n", "  callbacks:\n    check_writes:\n      _target_: experiments.sweep.CheckSweep\n"),
    ],
    ids=["without-hydra-defaults", "check-replaced"],
)
def test_a_root_config_without_the_write_check_writes_nothing(tmp_path, root):
    """Such a config used to be refused by its job, after Hydra had written `.hydra/` and the log
    file; it is refused before Hydra acts, and nothing but the config is in the folder after."""
    (tmp_path / "bare.yaml").write_text(root)
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), "-cn", "bare", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "runs without the callback retrofit.jobs.preflight.CheckWrites" in out.stderr
    assert "list `- hydra: default` in its defaults" in out.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["bare.yaml"]


def test_a_unit_store_that_is_a_file_is_one_line_before_any_work(host, tmp_path):
    """cache_dir/runs being a file used to end the run in a FileExistsError traceback."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "runs").write_text("not a folder")
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), *host_args(host), "cache_dir=cache", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert f"error: cache_dir={tmp_path / 'cache' / 'runs'} is not a directory; choose another cache_dir" in out.stderr
    assert not (tmp_path / "outputs" / "results").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["experiments/sweep.py", "--help"],
        ["experiments/diff.py", "results/retrofit_rmse.csv", "results/retrofit_rmse.csv"],
    ],
    ids=["help", "diff"],
)
def test_an_ascii_console_gets_what_it_can_print_not_a_traceback(command):
    """PYTHONIOENCODING=ascii used to end a command printing Δ, τ or × in a UnicodeEncodeError (after
    its results were written); such characters print as `?`."""
    out = run_hydra(str(ROOT / command[0]), *command[1:], cwd=ROOT, PYTHONIOENCODING="ascii")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stdout.isascii() and "?" in out.stdout


@pytest.mark.parametrize(
    "option, fix",
    [
        ("variant=configs/variant/x.yaml", "write variant=x (Hydra finds configs/variant/x.yaml by its name)"),
        ("variant=retrofit/configs/variant/oa_only.yaml", "write variant=oa_only (Hydra finds"),
        ("dataset=configs/dataset/diabetes.yml", "write dataset=diabetes (Hydra finds"),
        (
            "variant=/my/conf/variant/mine.yaml",
            "write variant=mine 'hydra.searchpath=[pkg://retrofit.configs,file:///my/conf]' (a config folder of your",
        ),
        ("variant=mine.yaml", "move the file to <folder>/variant/mine.yaml, write variant=mine 'hydra.searchpath=["),
        ("-m variant=oa_only,/tmp/x", "move the file to <folder>/variant/x.yaml, write variant=x"),
    ],
    ids=["checkout", "package", "yml", "own-folder", "bare-file", "sweep-list"],
)
def test_a_config_group_option_given_as_a_file_names_the_option_that_selects_it(option, fix):
    """`variant=configs/variant/x.yaml` used to end in Hydra's multi-clause "Could not find" error;
    a file given for a group's option is refused before Hydra composes, in one line that names the
    option selecting it: its stem, with the search-path entry where the file is outside the checkout."""
    from retrofit.errors import RunnerError
    from retrofit.jobs import CONFIGS_DIR
    from retrofit.jobs.preflight import check_command_line

    with pytest.raises(RunnerError) as err:
        check_command_line(option.split(), CONFIGS_DIR)
    head = f"{option.split()[-1]}: a config group option is a name, not a path; "
    assert str(err.value).startswith(head + fix) and "\n" not in str(err.value)


def test_the_command_line_refuses_a_variant_file_in_one_line():
    out = run_hydra("experiments/sweep.py", "variant=configs/variant/x.yaml", "--cfg", "job")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (
        "error: variant=configs/variant/x.yaml: a config group option is a name, not a path; write variant=x "
        "(Hydra finds configs/variant/x.yaml by its name)\n"
    )


@pytest.mark.parametrize(
    "override, key", [("device='???'", "device"), ("dataset.target='???'", "dataset.target"), ("seed='???'", "seed")]
)
def test_a_value_left_missing_by_an_override_is_refused_in_one_line_before_hydra_acts(tmp_path, override, key):
    """OmegaConf's missing value `???` given to a key the root config sets was refused only once the
    job started, after Hydra's own 'Error executing job' line and run folder, with OmegaConf's
    unfilled `$FULL_KEY`."""
    out = run_hydra(str(SWEEP), override, f"results_dir={tmp_path / 'r'}", f"hydra.run.dir={tmp_path / 'h'}")
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.splitlines()  # the root config's own example may follow (seed's comment line)
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {key} is required (an override or config file sets it to ???): give {key}=<value>"
    ), out.stderr
    assert not (tmp_path / "h").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "override",
    ['+hydra.sweeper.params.seed="3,4"', 'hydra.sweeper.params={seed:"3,4"}', "++hydra.sweeper.params.seed=1"],
)
def test_an_override_of_the_sweepers_params_is_one_line(tmp_path, override):
    """Hydra cannot merge an override into the basic sweeper's unset params: it ended in an
    AssertionError or AttributeError traceback."""
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), "-m", override, cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr == (
        f"error: {override}: hydra.sweeper.params cannot be set from the command line (Hydra fails on it); "
        "sweep the keys themselves: -m key=a,b\n"
    )
    assert list(tmp_path.iterdir()) == []
