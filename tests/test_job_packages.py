"""Jobs are found in every job package (`retrofit.jobs.JOB_PACKAGES`): the library's own in
`retrofit.jobs`, the benchmarks' in `experiments`; a name declared twice is refused naming both
files, and a job added to a job package runs as the shipped ones do, named after its module."""

import shutil
from pathlib import Path

import pytest
from processes import run_python

from retrofit import jobs
from retrofit.jobs import USAGE, declared_jobs

ROOT = Path(__file__).resolve().parents[1]

PROBE_JOB = """
from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs.start import start


@dataclass
class ProbeConfig:
    output: str = MISSING


CONFIG = "probe"
SCHEMA = ProbeConfig


def run(cfg, hydra_cfg):
    job = start(cfg, hydra_cfg, ProbeConfig, "configs/probe.yaml")
    (output,) = job.outputs(job.settings.output)
    output.write_text(hydra_cfg.job.name)
"""
"""A job of its own: writes the name Hydra gave the job to `output`."""

LAUNCH_WITH_EXTRA_JOBS = """
import sys
from pathlib import Path

from retrofit import jobs

jobs.JOB_PACKAGES = (*jobs.JOB_PACKAGES, "extra_jobs")
jobs.CONFIGS_DIR = Path.cwd() / "configs"
sys.argv = ["probe", *sys.argv[1:]]
jobs.launch("probe")
"""
"""Launches job `probe` with the package `extra_jobs` of the working directory added to the job
packages and the root configs read from its `configs/`."""


def _job_package(folder: Path, modules: dict[str, str]) -> None:
    """Package `extra_jobs` under `folder` holding `modules` (module name -> source)."""
    package = folder / "extra_jobs"
    package.mkdir()
    (package / "__init__.py").write_text('"""Jobs of their own."""\n')
    for name, source in modules.items():
        (package / f"{name}.py").write_text(source)


def test_the_library_jobs_and_the_benchmark_jobs_are_found_in_their_own_packages():
    packages = {job: source.module.rsplit(".", 1)[0] for job, source in declared_jobs().items()}
    assert sorted(job for job, package in packages.items() if package == "retrofit.jobs") == [
        "aggregate",
        "audit",
        "compare",
        "explain",
        "pretrain_host",
        "sink_mass",
        "sweep",
        "tau_sweep",
    ]
    assert sorted(job for job, package in packages.items() if package == "experiments") == [
        "ablation",
        "bench_attention",
        "bench_batch",
        "exactness",
        "explain_bench",
        "explain_scale",
        "host_quality",
        "noise_floor",
        "padding_demo",
        "scale_check",
        "sweep_cost",
    ]
    assert declared_jobs()["sweep"] == ("retrofit.jobs.sweep", "config", ())


@pytest.mark.parametrize(
    ("module", "config", "named"),
    [("exactness", "probe", "job 'exactness'"), ("probe", "exactness", "root config 'exactness'")],
)
def test_a_job_or_root_config_declared_twice_is_one_line_naming_both_files(
    module, config, named, tmp_path, monkeypatch, capsys
):
    _job_package(tmp_path, {module: f'CONFIG = "{config}"\n'})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(jobs, "JOB_PACKAGES", (*jobs.JOB_PACKAGES, "extra_jobs"))
    with pytest.raises(SystemExit) as refused:
        declared_jobs()
    assert refused.value.code == USAGE
    both = f"experiments/exactness.py and extra_jobs/{module}.py"
    assert capsys.readouterr().err == f"error: {named} is declared in both {both} (rename one)\n"


def test_a_job_added_to_a_job_package_is_checked_by_its_schema_and_runs_named_after_its_module(tmp_path):
    _job_package(tmp_path, {"probe": PROBE_JOB})
    shutil.copytree(ROOT / "configs" / "hydra", tmp_path / "configs" / "hydra")
    defaults = "defaults:\n  - probe_schema\n  - hydra: default\n  - _self_\n"
    (tmp_path / "configs" / "probe.yaml").write_text(f"{defaults}\noutput: probe.txt\n")
    refused = run_python("-c", LAUNCH_WITH_EXTRA_JOBS, "outpt=x.txt", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        "error: outpt is not a key of this config (did you mean output?)"
    ]
    ran = run_python("-c", LAUNCH_WITH_EXTRA_JOBS, "output=named.txt", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert (tmp_path / "named.txt").read_text() == "probe"
    assert [log.relative_to(tmp_path).parts[:2] for log in (tmp_path / "outputs").rglob("probe.log")] == [
        ("outputs", "probe")
    ]
