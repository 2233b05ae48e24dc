"""A launcher's settings are data (`retrofit.jobs.launchers`): the SLURM launcher's shell lines, a
value that would break out of its `#SBATCH` line, an option name that is not one, a second task per
job and more joblib workers than CPUs are refused in one line; its plain settings keep working."""

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from processes import run_hydra
from refusals import one_line

from retrofit.errors import RunnerError
from retrofit.jobs.instantiated import check_instantiated

ROOT = Path(__file__).resolve().parents[1]
SLURM = "hydra/launcher=slurm"


@pytest.mark.parametrize(
    "group, settings",
    [
        (SLURM, {"partition": "gpu", "timeout_min": 90, "cpus_per_task": 4, "mem_gb": 16, "gres": "gpu:1"}),
        (SLURM, {"account": "lab", "qos": "high", "additional_parameters.mail-user": "me@lab.org", "setup": []}),
        ("hydra/launcher=submitit_local", {"timeout_min": 5, "gpus_per_node": 1, "cpus_per_task": 2}),
        ("hydra/launcher=joblib", {"n_jobs": -1, "pre_dispatch": "3*n_jobs", "backend": "loky"}),
    ],
    ids=["slurm-resources", "slurm-accounting", "local", "joblib"],
)
def test_plain_launcher_settings_pass_and_take_effect(hydra_compose, group, settings):
    overrides = [f"{'+' * (key.count('.') > 0)}hydra.launcher.{key}={value}" for key, value in settings.items()]
    cfg = hydra_compose(overrides=[group, *overrides])
    check_instantiated(cfg)
    assert {key: OmegaConf.select(cfg.hydra.launcher, key) for key in settings} == settings


@pytest.mark.parametrize(
    "overrides, message",
    [
        ([SLURM, "hydra.launcher.setup=['source ~/.bashrc']"], "hydra.launcher.setup: shell lines a config writes"),
        (
            [SLURM, "hydra.launcher.partition='gpu\ntouch pwned #'"],
            "hydra.launcher.partition='gpu\\ntouch pwned #': a control character such as a line break ends",
        ),
        (
            [SLURM, "+hydra.launcher.additional_parameters.mail-user='a\nb'"],
            "hydra.launcher.additional_parameters.mail-user='a\\nb': a control character",
        ),
        ([SLURM, "hydra.launcher.tasks_per_node=4"], "hydra.launcher.tasks_per_node=4: each task would run the"),
        (["hydra/launcher=submitit_local", "hydra.launcher.nodes=2"], "hydra.launcher.nodes=2: each task would run"),
        (
            ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={(os.cpu_count() or 1) + 1}"],
            f"more worker processes than this machine's {os.cpu_count()} CPUs; give at most {os.cpu_count()}",
        ),
    ],
    ids=["setup", "line-break", "option-value", "tasks", "nodes", "joblib-workers"],
)
def test_a_launcher_setting_that_runs_code_or_reruns_a_job_is_refused(hydra_compose, overrides, message):
    with pytest.raises(RunnerError) as err:
        check_instantiated(hydra_compose(overrides=overrides))
    assert message in one_line(err)


def test_an_option_name_that_is_not_one_is_refused(hydra_compose, tmp_path):
    """A key the override grammar cannot spell (a space, an `=`), from a config file: sbatch would
    write it unquoted into the job script."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "flag.yaml").write_text(
        "# @package _global_\nhydra:\n  launcher:\n    additional_parameters:\n      'x=1 --wrap=id': 2\n"
    )
    searchpath = f"hydra.searchpath=[pkg://retrofit.configs,file://{tmp_path}]"
    with pytest.raises(RunnerError) as err:
        check_instantiated(hydra_compose(overrides=[SLURM, searchpath, "+experiment=flag"]))
    assert "hydra.launcher.additional_parameters: 'x=1 --wrap=id' is not an sbatch option name" in one_line(err)


def test_a_setup_line_in_an_experiment_file_is_refused_before_anything_is_written(tmp_path):
    """Through the entry point: an experiment file of one's own giving the SLURM launcher a setup
    line exits with the one line and writes nothing (no sweep folder, no .submitit/)."""
    (tmp_path / "configs" / "experiment").mkdir(parents=True)
    (tmp_path / "configs" / "experiment" / "cluster.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /hydra/launcher: slurm\n"
        f"hydra:\n  launcher:\n    setup: [touch {tmp_path / 'pwned'}]\n"
    )
    sweep = str(ROOT / "experiments" / "sweep.py")
    out = run_hydra(sweep, "-m", "-cd", str(tmp_path / "configs"), "+experiment=cluster", "seed=0,1", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: hydra.launcher.setup: shell lines a config writes into the job script")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs"]
