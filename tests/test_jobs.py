"""Where the jobs are and how each starts (`retrofit.jobs`, and `retrofit.__main__` listing them): the
modules of `experiments/` are the jobs, a new module with its root config is a job with nothing else
edited, an unknown job or an unusable home directory is one line, `retrofit` alone lists every job,
and `--help` lists the groups of its own job, each with its options as Hydra finds them (`job_groups`,
`group_options`). Each command runs as a subprocess, as a user runs it."""

import shutil
import subprocess
import tomllib

from processes import ROOT, run_entry_point, run_python

from retrofit.jobs import USAGE, job_configs, job_module, job_names, jobs_in, root_config
from retrofit.runner.sweep_config import BUILTIN_SEARCHPATH

CONFIGS = ROOT / "configs"


def one_line_error(out: subprocess.CompletedProcess) -> str:
    """The one line a refused command writes to stderr (asserting there is nothing else)."""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-3000:]
    return lines[0]


def test_the_modules_of_a_folder_are_its_jobs(tmp_path):
    for name in ("__init__.py", "probe.py", "_shared.py", "notes.md", "other.py"):
        (tmp_path / name).write_text("")
    assert jobs_in(tmp_path) == ["other", "probe"]


def test_every_module_of_experiments_is_a_job_whose_root_config_is_its_name():
    jobs = job_names()
    assert jobs == jobs_in(ROOT / "experiments") and {"sweep", "aggregate", "exactness", "bench_attention"} <= set(jobs)
    assert {job: job_module(job).__name__ for job in jobs} == {job: f"experiments.{job}" for job in jobs}
    assert {job: root_config(job_module(job)) for job in jobs} == {job: job for job in jobs} | {
        "aggregate": "sweep",  # the sweep's root config, with the aggregation's callback (its OVERRIDES)
        "compare": "diff",  # the diff's former name, which runs it
    }
    assert job_configs() == {job: job for job in jobs if job not in ("aggregate", "compare")}


PROBE_JOB = """
\"\"\"A probe: writes the name Hydra gave the job and the type of its settings to `output`.\"\"\"

from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart


@dataclass
class ProbeConfig:
    output: str = MISSING


SCHEMA = ProbeConfig


def run(job: JobStart) -> None:
    (output,) = job.outputs(job.settings.output)
    output.write_text(f"{job.hydra_cfg.job.name} {type(job.settings).__name__}")


if __name__ == "__main__":
    launch("probe")
"""
"""An experiment of its own, as `experiments/probe.py`."""

LAUNCH_FROM_CWD = """
import sys
from pathlib import Path

from retrofit import jobs

jobs.CONFIGS_DIR = Path.cwd() / "configs"
sys.argv = ["probe", *sys.argv[1:]]
jobs.launch("probe")
"""
"""Launches job `probe` from the working directory's `experiments` package (first on the path) with
the root configs of its `configs/`."""


def test_a_module_and_its_root_config_are_a_job_checked_by_its_schema_and_named_after_it(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "__init__.py").write_text('"""Experiments of their own."""\n')
    (tmp_path / "experiments" / "probe.py").write_text(PROBE_JOB)
    shutil.copytree(CONFIGS / "hydra", tmp_path / "configs" / "hydra")
    defaults = "defaults:\n  - probe_schema\n  - hydra: default\n  - _self_\n"
    (tmp_path / "configs" / "probe.yaml").write_text(f"{defaults}\noutput: probe.txt\n")
    refused = run_python("-c", LAUNCH_FROM_CWD, "outpt=x.txt", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        "error: outpt is not a key of this config (did you mean output?)"
    ]
    ran = run_python("-c", LAUNCH_FROM_CWD, "output=named.txt", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert (tmp_path / "named.txt").read_text() == "probe ProbeConfig"
    assert [log.relative_to(tmp_path).parts[:2] for log in (tmp_path / "outputs").rglob("probe.log")] == [
        ("outputs", "probe")
    ]


def test_launch_starts_the_job_as_its_module_asks(tmp_path):
    """`launch` checks the config against the module's `SCHEMA`, naming its root config, and hands
    `run` its settings as a schema object, or as the checked DictConfig with `AS_OBJECT = False`."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "__init__.py").write_text('"""Experiments of their own."""\n')
    (tmp_path / "experiments" / "probe.py").write_text(f"{PROBE_JOB}\nAS_OBJECT = False\n")
    shutil.copytree(CONFIGS / "hydra", tmp_path / "configs" / "hydra")
    (tmp_path / "configs" / "probe.yaml").write_text("defaults:\n  - probe_schema\n  - hydra: default\n  - _self_\n")
    ran = run_python("-c", LAUNCH_FROM_CWD, "output=named.txt", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert (tmp_path / "named.txt").read_text() == "probe DictConfig"
    added = run_python("-c", LAUNCH_FROM_CWD, "output=x.txt", "+extra=1", cwd=tmp_path)
    assert added.returncode == 1 and one_line_error(added).startswith("error: configs/probe.yaml: bad key 'extra'")


def test_a_home_directory_that_is_a_file_is_one_line_before_any_import(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    out = run_entry_point("exactness.py", cwd=tmp_path, HOME=str(home), SKB_DATA_DIRECTORY="")
    assert out.returncode == USAGE
    assert one_line_error(out) == f"error: HOME={home} is not a directory (set HOME to a writable directory)"
    out = run_python("-m", "retrofit", "audit", cwd=tmp_path, SKB_DATA_DIRECTORY=str(home / "data"))
    assert out.returncode == USAGE and one_line_error(out).startswith(f"error: SKB_DATA_DIRECTORY={home / 'data'} (")


def test_an_unknown_job_is_one_line_naming_the_jobs():
    out = run_python("-m", "retrofit", "exactnes")
    assert out.returncode == USAGE and "(did you mean exactness? one of ablation, aggregate, " in one_line_error(out)


def test_retrofit_alone_lists_every_job_with_one_line():
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
    assert described["diff"] == "Two retrofit_rmse.csv files diffed unit by unit, printed"  # what diff does
    assert described["compare"].startswith("The former name of diff")
    others = dict(line.split(maxsplit=1) for line in others_part.splitlines())
    assert others == {"preset_selection": "retrofit host_quality --config-name preset_selection"}
    assert {*job_configs(), *others} == {path.stem for path in CONFIGS.glob("*.yaml")}


def help_groups(template: str) -> dict[str, list[str]]:
    """Group -> options, from the `== Configuration groups ==` lines of a help text."""
    groups = template.split("== Configuration groups ==")[1].split("== Config ==")[0]
    return {
        line.split(": ")[0]: line.split(": ")[1].split("   (")[0].split(", ")
        for line in groups.splitlines()
        if ": " in line and not line.startswith(" ")
    }


def test_the_sweep_help_lists_the_options_it_finds_and_a_dataset_added_as_one_file(hydra_compose, tmp_path):
    """`experiments/sweep.py --help` lists the options of the groups a sweep selects from as Hydra
    finds them on the search path (`retrofit.jobs.group_options`): a dataset added as one YAML in a
    folder on the search path composes and is listed; `pretrain`, which is no sweep group, is not."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "toy.yaml").write_text("name: toy\nsource: csv\npath: toy.csv\ntarget: y\n")
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path}]"
    cfg = hydra_compose("sweep", [searchpath, "dataset=toy"])
    assert cfg.dataset.name == "toy"
    listed = help_groups(cfg.hydra.help.template)
    assert sorted(listed) == ["dataset", "decomposition", "experiment", "host", "hydra/launcher", "variant"]
    shipped = sorted(path.stem for path in (CONFIGS / "dataset").glob("*.yaml"))
    assert listed["dataset"] == sorted([*shipped, "toy"])
    assert listed["variant"] == ["baseline", "full_o", "o_closed", "oa_only"]
    assert listed["host"] == sorted(path.stem for path in (CONFIGS / "host").glob("*.yaml"))
    assert {"basic", "joblib", "submitit_local"} <= set(listed["hydra/launcher"])
    assert help_groups(hydra_compose("sweep").hydra.help.template)["dataset"] == shipped
    out = run_python("experiments/sweep.py", "--help", searchpath, HYDRA_FULL_ERROR="0")
    assert out.returncode == 0, out.stderr
    assert help_groups(out.stdout) == listed and "pretrain" not in out.stdout


OWN_GROUPS = {
    "diff": [],
    "columns": [],
    "explain": ["dataset", "host"],
    "audit": ["host"],
    "noise_floor": ["benchmark", "dataset", "host"],
    "pretrain_host": ["pretrain"],
    "preset_selection": ["benchmark", "paths"],
}
"""Root config -> the config groups its defaults list (or the one it extends) selects from."""


def test_a_jobs_help_lists_its_own_groups_only(hydra_compose):
    """`retrofit diff --help` used to list the sweep's groups (Hydra's default help lists every folder of
    configs/); each job's help lists the groups its own defaults list selects from, each with the
    options Hydra finds, and a job of keys only says it has none."""
    for name, groups in OWN_GROUPS.items():
        listed = help_groups(hydra_compose(name).hydra.help.template)
        assert sorted(listed) == groups, name
    assert help_groups(hydra_compose("explain").hydra.help.template)["host"] == sorted(
        path.stem for path in (CONFIGS / "host").glob("*.yaml")
    )
    out = run_python("-m", "retrofit", "diff", "--help")
    assert out.returncode == 0, out.stderr
    groups, config = out.stdout.split("== Configuration groups ==")[1].split("== Config ==")
    assert groups.strip() == "(no config groups, only the keys below)"
    assert out.stdout.startswith("retrofit diff ") and "dataset" not in out.stdout
    assert [line.split(":")[0] for line in config.splitlines() if line[:2] in ("a:", "b:")] == ["a", "b"]
