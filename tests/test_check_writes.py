"""Hydra's own compositions are checked as the entry point's is (`retrofit.jobs.preflight.CheckWrites`):
a config file changed between the entry point's composition and Hydra's, and a job of a sweep whose
override chooses a config option naming code, are refused in one line before any job runs."""

import sys
from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra
from processes import run_hydra

import retrofit.jobs.compose
from retrofit.jobs import launch

ROOT = Path(__file__).resolve().parents[1]
SWEEP = str(ROOT / "experiments" / "sweep.py")
PLAIN = "# @package _global_\nseed: 1\n"
NAMING_CODE = "# @package _global_\nseed: 2\ndataset:\n  _target_: builtins.open\n"


def _experiments(folder: Path, **files: str) -> Path:
    (folder / "experiment").mkdir(parents=True)
    for name, text in files.items():
        (folder / "experiment" / f"{name}.yaml").write_text(text)
    return folder


def test_a_sweep_job_choosing_an_option_that_names_code_is_refused_before_any_job_runs(tmp_path):
    """Job 1 of `+experiment=plain,coded` names `builtins.open`: the entry point's multirun config
    does not hold the swept option, each job's composition does; no job runs (no results, no job folder)."""
    configs = _experiments(tmp_path / "configs", plain=PLAIN, coded=NAMING_CODE)
    out = run_hydra(
        SWEEP, "-m", "-cd", str(configs), "+experiment=plain,coded", f"hydra.sweep.dir={tmp_path}/m", cwd=tmp_path
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.endswith(
        "error: job 1 (+experiment=coded): dataset._target_=builtins.open: a config is data, and only "
        "hydra.callbacks, hydra.launcher and hydra.sweeper name a class to instantiate; remove the _target_\n"
    ), out.stderr
    assert not (tmp_path / "m" / "0").exists() and not (tmp_path / "results").exists()


def test_a_config_file_changed_after_the_entry_point_read_it_is_refused(tmp_path, monkeypatch, capsys):
    """The experiment file is rewritten just after the entry point composed it (a stand-in for a
    file changed between the two compositions): Hydra composes the new text, and `CheckWrites`
    refuses it before the job runs."""
    configs = _experiments(tmp_path / "configs", pick=PLAIN)
    composed = retrofit.jobs.compose.command_config

    def then_rewritten(*args, **kwargs):
        result = composed(*args, **kwargs)
        (configs / "experiment" / "pick.yaml").write_text(NAMING_CODE)
        return result

    monkeypatch.setattr(retrofit.jobs.compose, "command_config", then_rewritten)
    monkeypatch.setattr(sys, "argv", ["sweep", "-cd", str(configs), "+experiment=pick", f"hydra.run.dir={tmp_path}/r"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        launch("sweep")
    GlobalHydra.instance().clear()
    assert str(exit_.value).startswith("error: dataset._target_=builtins.open: a config is data")
    assert not (tmp_path / "r").exists() and not (tmp_path / "results").exists()


def test_a_callback_added_to_a_config_file_after_the_entry_point_read_it_is_never_instantiated(tmp_path, monkeypatch):
    """Hydra instantiates the callbacks of its own composition before any callback runs, so
    `CheckWrites` alone would come too late: the rewritten file's callback `builtins.open` would open
    (create) its file. Hydra's composition is checked as it is made (`retrofit.jobs.compositions`):
    refused in one line, and the file is never created."""
    opened = tmp_path / "opened"
    configs = _experiments(tmp_path / "configs", pick=PLAIN)
    opening = f"{PLAIN}hydra:\n  callbacks:\n    evil:\n      _target_: builtins.open\n      _args_: [{opened}, w]\n"
    composed = retrofit.jobs.compose.command_config

    def then_rewritten(*args, **kwargs):
        result = composed(*args, **kwargs)
        (configs / "experiment" / "pick.yaml").write_text(opening)
        return result

    monkeypatch.setattr(retrofit.jobs.compose, "command_config", then_rewritten)
    monkeypatch.setattr(sys, "argv", ["sweep", "-cd", str(configs), "+experiment=pick", f"hydra.run.dir={tmp_path}/r"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        launch("sweep")
    GlobalHydra.instance().clear()
    assert str(exit_.value).startswith("error: hydra.callbacks.evil._target_=builtins.open: a run instantiates no code")
    assert "\n" not in str(exit_.value)
    assert not opened.exists() and not (tmp_path / "r").exists()
