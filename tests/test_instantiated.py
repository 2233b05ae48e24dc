"""Configs cannot name code (`retrofit.jobs.instantiated`): a composed config whose callbacks,
launcher, sweeper, any other `_target_` or logging config names code the project does not list is
refused in one line, before Hydra instantiates anything, whichever source set it."""

from pathlib import Path

import pytest
from processes import run_hydra
from refusals import one_line

from retrofit.errors import RunnerError
from retrofit.jobs.instantiated import check_instantiated

ROOT = Path(__file__).resolve().parents[1]
SWEEP = str(ROOT / "experiments" / "sweep.py")


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["hydra/launcher=joblib"],
        ["hydra/launcher=submitit_local"],
        ["hydra/launcher=slurm"],
        ["hydra.callbacks.check_sweep._target_=experiments.aggregate.AggregateSweep"],
        ["hydra/job_logging=stdout", "hydra/hydra_logging=hydra_debug"],
    ],
    ids=["default", "joblib", "submitit-local", "slurm", "aggregate", "hydra-logging-options"],
)
def test_the_projects_own_configs_pass(hydra_compose, overrides):
    check_instantiated(hydra_compose(overrides=overrides))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["+hydra.callbacks.evil._target_=builtins.open"],
            "hydra.callbacks.evil._target_=builtins.open: a run instantiates no code a config names; as a callback",
        ),
        (["hydra.sweeper._target_=os.system"], "hydra.sweeper._target_=os.system: a run instantiates no code"),
        (["hydra/launcher=joblib", "hydra.launcher._target_=os.system"], "as a launcher it takes one of"),
        (["+dataset._target_=os.system"], "dataset._target_=os.system: a config is data"),
        (
            ["+hydra.callbacks.check_writes.inner._target_=os.system"],
            "hydra.callbacks.check_writes.inner._target_=os.system: a config is data",
        ),
        (["hydra.job_logging.handlers.console.class=builtins.open"], "as a logging class it takes one of"),
        (["hydra.job_logging.handlers.console.stream=ext://os.system"], "as an ext:// name it takes one of"),
        (["+hydra.callbacks.evil._target_=${oc.env:NO_SUCH_VARIABLE}"], "through an interpolation that does not"),
    ],
    ids=["callback", "sweeper", "launcher", "task-target", "nested-target", "log-class", "log-ext", "unresolved"],
)
def test_code_a_config_names_is_refused_by_place(hydra_compose, overrides, message):
    with pytest.raises(RunnerError) as err:
        check_instantiated(hydra_compose(overrides=overrides))
    assert message in one_line(err)


def test_a_logging_factory_in_a_config_file_is_refused(hydra_compose, tmp_path):
    """A `()` key, which Hydra's override grammar cannot spell, comes from a config file."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "factory.yaml").write_text(
        "# @package _global_\nhydra:\n  job_logging:\n    formatters:\n      simple:\n        (): builtins.print\n"
    )
    searchpath = f"hydra.searchpath=[pkg://retrofit.configs,file://{tmp_path}]"
    cfg = hydra_compose(overrides=[searchpath, "+experiment=factory"])
    with pytest.raises(RunnerError, match=r"hydra\.job_logging\.formatters\.simple\.\(\): a logging factory"):
        check_instantiated(cfg)


def _opener(path: Path) -> str:
    """An experiment file whose callback opens `path` for writing (which empties it)."""
    return (
        "# @package _global_\nhydra:\n  callbacks:\n    opener:\n"
        f"      _target_: builtins.open\n      _args_: [{path}, w]\n"
    )


@pytest.mark.parametrize("route", ["config-dir", "searchpath"])
def test_a_callback_in_a_config_file_runs_nothing_and_writes_nothing(tmp_path, route):
    """An experiment file under `--config-dir` (or on `hydra.searchpath`) naming `builtins.open`
    used to empty the file it named, exit 0; it is refused before Hydra acts: the file keeps its
    bytes and the command writes nothing (no outputs/ folder either)."""
    victim = tmp_path / "victim.csv"
    victim.write_text("a,b\n1,2\n")
    configs = tmp_path / "configs"
    (configs / "experiment").mkdir(parents=True)
    (configs / "experiment" / "opener.yaml").write_text(_opener(victim))
    where = (
        ["--config-dir", str(configs)]
        if route == "config-dir"
        else [f"hydra.searchpath=[pkg://retrofit.configs,file://{configs}]"]
    )
    out = run_hydra(SWEEP, *where, "+experiment=opener", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: hydra.callbacks.opener._target_=builtins.open: a run instantiates no code")
    assert victim.read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "victim.csv"]
