"""The config an entry point checks is the config Hydra runs (`retrofit.jobs.compose`): the same
search path order (`--config-dir` before `hydra.searchpath`), root config and mode."""

from pathlib import Path

import pytest
from hydra.types import RunMode
from processes import run_hydra

from experiments import sweep
from retrofit.errors import RunnerError
from retrofit.jobs import CONFIGS_DIR
from retrofit.jobs.compose import command_config

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
