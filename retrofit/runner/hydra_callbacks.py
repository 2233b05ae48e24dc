"""A Hydra callback that checks a whole sweep before any job runs and sums it up after the last.

Before the first job it composes every job (`retrofit.runner.compose.sweep_job_configs`), builds
and checks their cases together (`retrofit.runner.case.check_cases`: each job's data loads and
splits; no unit that two jobs would run differently) and its seed lists, says each notice once and
how many units the store already holds, and writes each job's manifest (`retrofit.runner.collect`).
After the last job it writes the sweep's results from exactly those units (`finish_sweep`) and,
with `reference=<csv>`, checks them against that file as read before the sweep began.
"""

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from retrofit.errors import RunnerError, exit_on_any_error
from retrofit.runner import console
from retrofit.runner.case import Case, check_cases, reusable
from retrofit.runner.collect import CaseManifest, current_records, finish_sweep, record_job
from retrofit.runner.compare import Reference, require_covered
from retrofit.runner.compose import sweep_job_configs
from retrofit.runner.config import case_from_hydra
from retrofit.runner.schema import reference_of


def sweep_cases(config: DictConfig) -> list[tuple[DictConfig, Case]]:
    """Every job of the sweep composed (with its `hydra` node) and its `Case` built (validating it)."""
    return [(job, case_from_hydra(job, job.hydra)) for job in sweep_job_configs(config)]


def check_seed_selections(jobs: list[tuple[DictConfig, Case]]) -> None:
    """RunnerError when `timing.seeds` or `decomposition.seeds` selects no job of this sweep (no
    job's seed is in its list): the key would time no case or run no arm, and so take no effect."""
    for key, chosen in (("timing.seeds", _timing_seeds), ("decomposition.seeds", _arm_seeds)):
        lists = [(case.seed, chosen(job)) for job, case in jobs]
        if all(seeds is not None and seed not in seeds for seed, seeds in lists):
            ran = sorted({seed for seed, _ in lists})
            raise RunnerError(
                f"{key}={list(lists[0][1])} selects no case of this sweep (its seeds: {ran}); "
                "list some of those seeds, or null for every case"
            )


def _timing_seeds(job: DictConfig) -> list[int] | None:
    return job.timing.seeds if job.timing.rounds else None


def _arm_seeds(job: DictConfig) -> list[int] | None:
    return None if job.get("decomposition") is None else job.decomposition.get("seeds")


class CheckSweep(Callback):
    """Reject an invalid sweep before anything runs; each job's manifest; how many units the store
    already holds; the sweep's results, headline table and reproduction check after the last job."""

    def __init__(self) -> None:
        self.manifests: list[tuple[CaseManifest, Path]] = []
        self.reference: Reference | None = None
        self.units = (0, 0)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_any_error():
            with console.collected_notices() as notices:
                jobs = sweep_cases(config)
                cases = [case for _, case in jobs]
                check_cases(cases)
                check_seed_selections(jobs)
            self.reference = reference_of(config, Path(config.hydra.runtime.cwd))
            require_covered(self.reference, (case.key(unit) for case in cases for unit in case.units))
            self.manifests = [(record_job(job, job.hydra, case), case.runs_dir) for job, case in jobs]
            for notice in notices:
                console.say(f"note: {notice}")
            self.units = (reusable(cases), len({case.key(unit) for case in cases for unit in case.units}))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        console.say(console.reused(*self.units))
        with exit_on_any_error():
            finish_sweep(config, current_records(self.manifests), self.reference)
