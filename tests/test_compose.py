"""The config an entry point checks is the config Hydra runs (`retrofit.jobs.compose`): the same
search path order (`--config-dir` before `hydra.searchpath`), root config and mode."""

from pathlib import Path

import pytest
from hydra.types import RunMode
from processes import run_hydra

from experiments import sweep
from retrofit.errors import RunnerError
from retrofit.jobs import CONFIGS_DIR
from retrofit.jobs.compose import command_config, flags_first

ROOT = Path(__file__).resolve().parents[1]


def _composed(*argv: str):
    return command_config(list(argv), str(CONFIGS_DIR), "sweep", sweep.run)


def _experiment(folder: Path, n_estimators: int) -> Path:
    (folder / "experiment").mkdir(parents=True)
    (folder / "experiment" / "pick.yaml").write_text(f"# @package _global_\nn_estimators: {n_estimators}\n")
    return folder


def test_a_config_dir_comes_before_the_search_path_as_in_hydra(job_schemas, tmp_path):
    """The same experiment file in a `--config-dir` folder and in a `hydra.searchpath` folder: the
    entry point composes the one Hydra reads (`--cfg job` prints what Hydra composed)."""
    config_dir, searched = _experiment(tmp_path / "cd", 3), _experiment(tmp_path / "sp", 5)
    argv = ["-cd", str(config_dir), f"hydra.searchpath=[pkg://retrofit.configs,file://{searched}]", "+experiment=pick"]
    cfg, mode = _composed(*argv)
    hydra = run_hydra(str(ROOT / "experiments" / "sweep.py"), *argv, "--cfg", "job", cwd=tmp_path)
    assert hydra.returncode == 0, hydra.stderr
    assert cfg.n_estimators == 3 and "\nn_estimators: 3\n" in hydra.stdout and mode == RunMode.RUN


@pytest.mark.parametrize(
    "argv, mode",
    [
        (["seed=1"], RunMode.RUN),
        (["-m", "seed=0,1"], RunMode.MULTIRUN),
        (["hydra.mode=MULTIRUN", "seed=0,1"], RunMode.MULTIRUN),
        (["--multirun", "hydra.mode=RUN", "seed=0,1"], RunMode.MULTIRUN),
    ],
    ids=["run", "flag", "config-mode", "flag-over-config-mode"],
)
def test_the_mode_is_hydras(job_schemas, argv, mode):
    cfg, composed = _composed(*argv)
    assert composed == mode and cfg.hydra.mode == mode


def test_a_root_config_named_on_the_command_line_is_the_one_composed(job_schemas):
    cfg, _ = _composed("-cn", "tau_sweep")
    assert cfg.hydra.job.config_name == "tau_sweep" and "c_values" in cfg


@pytest.mark.parametrize("argv", [["--cfg", "job"], ["--info", "config"], ["--hydra-help"]])
def test_a_command_that_runs_no_job_is_not_composed(job_schemas, argv):
    assert _composed(*argv) is None


def test_a_rerun_from_a_pickle_is_refused(job_schemas, tmp_path):
    with pytest.raises(RunnerError, match=r"--experimental-rerun unpickles a saved config, and a pickle runs code"):
        _composed("--experimental-rerun", str(tmp_path / "config.pickle"))


@pytest.mark.parametrize(
    "argv, ordered",
    [
        (["seed=1", "-m", "seed=2,3"], ["-m", "seed=1", "seed=2,3"]),
        (["a=1", "--config-dir", "own", "b=2", "-cn", "mine"], ["--config-dir", "own", "-cn", "mine", "a=1", "b=2"]),
        (["a=1", "--info", "a=2"], ["--info", "all", "a=1", "a=2"]),
        (["a=1", "-i", "defaults", "--cfg=job", "a=2"], ["-i", "defaults", "--cfg=job", "a=1", "a=2"]),
    ],
    ids=["multirun", "valued-flags", "info-without-value", "info-with-value"],
)
def test_flags_come_first_each_with_its_value_and_the_overrides_keep_their_order(argv, ordered):
    assert flags_first(argv) == ordered


def test_a_flag_between_overrides_runs_the_command_as_written():
    """`seed=1 --cfg job seed=2` ended in Hydra's usage (eight lines) and "unrecognized arguments: seed=2"."""
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), "seed=1", "--cfg", "job", "seed=2")
    assert out.returncode == 0 and "\nseed: 2\n" in out.stdout, out.stderr[-3000:]
