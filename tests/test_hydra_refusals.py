"""What used to end in a traceback or be ignored, said in one line naming the key and the fix: a
value whose interpolation does not resolve, `hydra.job.chdir=true`, the record variable set by a
config, a full device under Hydra's run folder (`retrofit.jobs.preflight`, `retrofit.jobs.exits`)."""

import copy
import errno
from pathlib import Path

import pytest
from hydra.types import RunMode
from omegaconf import open_dict
from processes import run_hydra
from refusals import one_line

from experiments import sweep
from retrofit.errors import RunnerError
from retrofit.jobs import CONFIGS_DIR
from retrofit.jobs.compose import command_config
from retrofit.jobs.exits import exit_on_full_disk
from retrofit.jobs.preflight import check_composed, hydra_writes
from retrofit.record_guard import RECORD_ENV

ROOT = Path(__file__).resolve().parents[1]
SWEEP = str(ROOT / "experiments" / "sweep.py")


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["-m", "results_dir=${{hydra:runtime.output_dir}}/r", "seed=0,1", "hydra.sweep.dir={tmp}/m"],
            "error: results_dir=${{hydra:runtime.output_dir}}/r does not resolve: ValueError raised while "
            "resolving interpolation: HydraConfig was not set; a ${{hydra:...}} value exists only inside a running "
            "job, and results_dir is read before one runs (by the checks of a run or a sweep); give results_dir a "
            "plain path\n",
        ),
        (
            ["hydra.run.dir=${{nope}}"],
            "error: hydra.run.dir=${{nope}} does not resolve: Interpolation key 'nope' not found; fix the "
            "interpolation, or give hydra.run.dir a plain value\n",
        ),
        (
            ["-m", "hydra.sweep.subdir=${{nope}}", "seed=0,1", "hydra.sweep.dir={tmp}/m"],
            "error: hydra.sweep.subdir=${{nope}} does not resolve: Interpolation key 'nope' not found; fix the "
            "interpolation, or give hydra.sweep.subdir a plain value\n",
        ),
        (
            ["hydra.job.chdir=true"],
            "error: hydra.job.chdir=true: a job runs in the directory the command starts in, where its relative "
            "paths (results_dir, cache_dir, a dataset's file) are read; drop it (Hydra's own files go to "
            "hydra.run.dir)\n",
        ),
    ],
    ids=["hydra-resolver-in-a-sweep", "run-dir", "job-folder", "chdir"],
)
def test_a_setting_hydra_cannot_honour_is_one_line_and_writes_nothing(tmp_path, args, message):
    """These ended in a 128-line InterpolationResolutionError or ran with `chdir` silently ignored."""
    out = run_hydra(SWEEP, *(a.format(tmp=tmp_path) for a in args), "dataset.target=nope", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr == message.format(tmp=tmp_path), out.stderr
    assert list(tmp_path.iterdir()) == []


def _composed(*argv: str):
    return command_config(list(argv), str(CONFIGS_DIR), "sweep", sweep.run)


def test_interpolations_that_resolve_in_the_job_are_honoured(job_schemas):
    """`${hydra:runtime.output_dir}` in a single run's results_dir (the run folder, read inside the job)
    and `${hydra.job.num}` in a sweep's job folder pass the checks, and each job's folder is its own."""
    check_composed(*_composed("results_dir=${hydra:runtime.output_dir}/r"))
    cfg, mode = _composed("-m", "hydra.sweep.dir=/tmp/m", "hydra.sweep.subdir=s${hydra.job.num}", "seed=0,1")
    check_composed(cfg, mode)
    assert hydra_writes(copy.deepcopy(cfg), RunMode.MULTIRUN, 1)["hydra.sweep.subdir"] == Path("/tmp/m/s1")


def test_a_config_cannot_set_the_record_variable(job_schemas):
    """`hydra.job.env_set` applies inside the job, where the record guard reads the variable: a
    config setting it would open the committed record to any job."""
    cfg, mode = _composed(f"+hydra.job.env_set.{RECORD_ENV}=1")
    with pytest.raises(RunnerError) as err:
        check_composed(cfg, mode)
    assert one_line(err).startswith(f"hydra.job.env_set.{RECORD_ENV}: the record variable is set by the Makefile")
    with open_dict(cfg):
        cfg.hydra.job.env_set = {"OMP_NUM_THREADS": "1"}
    check_composed(cfg, mode)


@pytest.mark.parametrize("name", ["HOME", "SKB_DATA_DIRECTORY", "LD_PRELOAD", "PYTHONPATH"])
def test_a_config_sets_no_variable_that_moves_what_a_job_writes_or_runs(job_schemas, name):
    """`hydra.job.env_set.HOME=<checkout>/results` made tabpfn's import create skrub_data/ (and
    matplotlib its .config/) in the committed record; LD_PRELOAD or PYTHONPATH would load code of
    the config's choosing into the job's subprocesses."""
    for argv in ([], ["-m", "seed=0,1"]):
        cfg, mode = _composed(*argv, f"+hydra.job.env_set.{name}=/tmp/elsewhere")
        with pytest.raises(RunnerError) as err:
            check_composed(cfg, mode)
        assert one_line(err).startswith(f"hydra.job.env_set.{name}: a config sets only OMP_NUM_THREADS, ")
        assert str(err.value).endswith(f"set {name} in the shell that runs the command")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device that is always full")
def test_a_full_device_under_the_run_folder_is_one_line_naming_it(tmp_path):
    """Hydra's first write under `hydra.run.dir` is `.hydra/config.yaml`; there it is /dev/full, which
    refuses every write with ENOSPC. That ended in an OSError traceback."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").symlink_to("/dev/full")
    out = run_hydra(SWEEP, f"hydra.run.dir={run}", "dataset.target=nope", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr == (
        f"error: no space left on the device holding {run} (No space left on device); free space there, "
        "or set hydra.run.dir to a folder on another device\n"
    ), out.stderr


def test_a_full_device_names_the_file_when_it_is_known(tmp_path, capsys):
    with pytest.raises(SystemExit) as done, exit_on_full_disk("free space there", tmp_path / "a" / "b"):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "f.csv"))
    assert done.value.code == 1
    assert (
        capsys.readouterr().err == f"error: no space left on the device holding {tmp_path / 'f.csv'} (No "
        "space left on device); free space there\n"
    )
    with pytest.raises(SystemExit), exit_on_full_disk("free space there", tmp_path / "a" / "b"):
        raise OSError(errno.EDQUOT, "Disk quota exceeded")
    assert f"holding {tmp_path} (Disk quota exceeded)" in capsys.readouterr().err  # the folder as far as it exists
    with pytest.raises(PermissionError), exit_on_full_disk("free space there"):
        raise PermissionError(errno.EACCES, "Permission denied")  # another OSError keeps its traceback
