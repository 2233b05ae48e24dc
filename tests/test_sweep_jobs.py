"""A multirun's jobs (`retrofit.runner.sweep_jobs`): counted as the basic sweeper makes them and
bounded before they are expanded, a job listed twice refused at once, the count said before any job
is composed, and the job configs composed once per multirun config."""

from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.utils import get_class
from omegaconf import open_dict
from processes import run_hydra

from retrofit.bounds import MAX_JOBS
from retrofit.errors import RunnerError
from retrofit.runner.sweep_jobs import job_count, sweep_job_configs, sweep_jobs

ROOT = Path(__file__).resolve().parents[1]
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def _multirun(hydra_compose, *task: str):
    """The sweep's root config composed, with `task` as its command line's overrides."""
    cfg = hydra_compose("sweep", [])
    with open_dict(cfg):
        cfg.hydra.overrides.task = list(task)
    return cfg


@pytest.mark.parametrize(
    "overrides",
    [
        ["seed=0,1,2"],
        ["seed=range(0,10,3)"],
        ["test_size=range(0.1,0.5,0.15)"],
        ["seed=0,1", "dataset=wage,auto,diabetes"],
        ["seed=0,1", "dataset=wage", "seed=5"],
        ["seed=range(0,4)", "n_estimators=choice(1,2)", "precision=float32"],
        ["seed=range(3,3)"],
    ],
    ids=["list", "int-range", "float-range", "grid", "later-key-wins", "range-choice-value", "empty-range"],
)
def test_the_count_is_the_number_of_jobs_the_basic_sweeper_makes(overrides):
    parsed = OverridesParser.create().parse_overrides(overrides)
    (jobs,) = get_class(BASIC_SWEEPER).split_arguments(parsed, None)
    assert job_count(parsed) == len(jobs)


def test_a_sweep_above_the_bound_is_refused_before_it_is_expanded(hydra_compose, monkeypatch):
    """`seed=range(0,3000)` or a 100 × 100 grid used to spend half a minute composing its jobs
    before any word; the count comes from the lists' lengths, and the sweeper never expands them."""

    def expanded(*args):
        raise AssertionError("the sweep was expanded")

    monkeypatch.setattr(get_class(BASIC_SWEEPER), "split_arguments", staticmethod(expanded))
    for task, count in ((["seed=range(0,3000)"], 3000), (["seed=range(0,100)", "n_estimators=range(1,101)"], 10000)):
        with pytest.raises(RunnerError, match=rf"this sweep has {count} jobs, more than the {MAX_JOBS} one command"):
            sweep_jobs(_multirun(hydra_compose, *task))


def test_a_sweep_at_the_bound_runs(hydra_compose):
    assert len(sweep_jobs(_multirun(hydra_compose, f"seed=range(0,{MAX_JOBS})"))) == MAX_JOBS


def test_a_job_listed_twice_is_refused_naming_both(hydra_compose):
    with pytest.raises(RunnerError, match=r"jobs 0 and 2 of this sweep are the same job \(seed=0 dataset=wage\)"):
        sweep_jobs(_multirun(hydra_compose, "seed=0,1", "dataset=wage,auto,wage"))


def test_the_jobs_are_composed_once_per_multirun_config(hydra_compose):
    cfg = _multirun(hydra_compose, "seed=3,4")
    jobs = sweep_job_configs(cfg)
    assert [job.seed for job in jobs] == [3, 4]
    assert sweep_job_configs(cfg) is jobs
    assert sweep_job_configs(_multirun(hydra_compose, "seed=3,4")) is not jobs


def test_the_count_is_said_before_the_jobs_are_composed_and_a_refusal_is_one_line(tmp_path):
    """The count comes first on stdout; the jobs' own check then refuses (`dataset.target=nope`)."""
    sweep = str(ROOT / "experiments" / "sweep.py")
    counted = run_hydra(sweep, "-m", "seed=0,1", "dataset.target=nope", f"hydra.sweep.dir={tmp_path}/m", cwd=tmp_path)
    assert counted.returncode == 1 and "no target column 'nope'" in counted.stderr, counted.stderr
    assert counted.stdout.startswith("2 jobs: each is composed and checked before the first runs\n")
    for task in (["seed=range(0,3000)"], ["seed=0,0"]):
        out = run_hydra(sweep, "-m", *task, cwd=tmp_path)
        assert out.returncode == 1 and out.stderr.count("\n") == 1 and out.stdout == "", out.stderr
        assert out.stderr.startswith(("error: this sweep has 3000 jobs", "error: jobs 0 and 1 of this sweep"))
    assert list(tmp_path.iterdir()) == []  # not even the sweep folder: every refusal came before any write
