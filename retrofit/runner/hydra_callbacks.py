"""What the sweep's Hydra callback (`experiments.sweep.CheckSweep`) does: check a whole sweep
before any job runs and write its results after the last.

Before the first job it composes every job as Hydra's configured sweeper expands them
(`retrofit.runner.config.sweep_job_configs`), builds and checks their cases together
(`retrofit.runner.case.check_cases`: each job's data loads and splits; no unit that two jobs would
run differently) and its seed lists, says each notice once, and reads the reference. After the last
job it writes the sweep's results from its cases' units with the rows already there (`retrofit.runner.finish`) and,
with `reference=<csv>`, checks them against that file as read before the sweep began.
"""

from pathlib import Path

from omegaconf import DictConfig

from retrofit.errors import RunnerError
from retrofit.record_guard import in_record
from retrofit.results.compare import Reference, require_covered
from retrofit.runner import console
from retrofit.runner.case import Case, check_cases
from retrofit.runner.config import case_from_hydra, sweep_job_configs
from retrofit.runner.finish import finish, sweep_records
from retrofit.runner.schema import reference_of, resolve, results_dir_of


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


def checked_sweep(config: DictConfig) -> tuple[list[Case], Reference | None]:
    """The cases of the multirun `config`, checked together (module docstring), and its reference
    (covered by the cases when a record run requires every row)."""
    with console.collected_notices() as notices:
        jobs = sweep_cases(config)
        cases = [case for _, case in jobs]
        check_cases(cases)
        check_seed_selections(jobs)
    reference = reference_of(config, Path(config.hydra.runtime.cwd))
    require_covered(reference, (case.key(unit) for case in cases for unit in case.units))
    for notice in notices:
        console.say(f"note: {notice}")
    return cases, reference


def finish_sweep(config: DictConfig, cases: list[Case], reference: Reference | None, reused: str) -> None:
    """The sweep's results from its cases' stored units (`retrofit.runner.finish`), with the rows
    already in its results_dir kept (two sweeps into one folder keep each other's rows), except in
    the committed record, which holds exactly the rows of the sweep that makes it."""
    sweep_dir = resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir)
    logs = console.job_logs(sweep_dir, config.hydra.job.name)
    results_dir = results_dir_of(config, config.hydra)
    record = in_record(results_dir)  # the record holds exactly its sweep's rows; elsewhere runs accumulate
    paths = {case.host: case.host_path for case in cases}
    finish(results_dir, sweep_records(cases), logs, reused, keep=not record, reference=reference, host_paths=paths)
