"""The retrofit sweep, one case (host × dataset × seed, every selected variant) per job.

    python experiments/sweep.py dataset=<name> seed=<n> results_dir=<dir>   # = python -m retrofit sweep ...
    python experiments/sweep.py -m dataset=diabetes,auto variant=oa_only,full_o   # a grid: one baseline per case
    python experiments/sweep.py -m +experiment=paper_table                 # the default grid (make retrofit)
    python experiments/sweep.py -v ...                                     # per-unit detail on the console too

A single run adds its case's rows to <results_dir>/retrofit_rmse.csv, a sweep (-m) its jobs' rows at
its end (`retrofit.runner.sweep_config`): rows of other units already there are kept, its own
replace theirs, and a row of one of its units computed with other settings is refused by name,
never replaced; the committed record alone holds exactly the rows of the sweep that makes it. With
reference=<csv>, either checks that its rows reproduce that file. Each job shows a progress bar
over its units; both end with the headline table and the files written.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit import runner
from retrofit.jobs import launch
from retrofit.jobs.exits import callback_errors
from retrofit.jobs.start import JobStart
from retrofit.runner import SweepConfig, reference_of, results_dir_of

SCHEMA = SweepConfig
AS_OBJECT = False

if TYPE_CHECKING:
    from retrofit.results.reproduction import Reference
    from retrofit.runner.case import Case


def run(job: JobStart) -> None:
    """Run the case `job` describes; a single run also writes its rows and checks them (`finish`).
    A CSV named on the command line is checked first (`job_start`), before any model loads, and so
    is a single run's `timing.seeds` or `decomposition.seeds` that leaves out its seed."""
    from retrofit.runner.case import run_case
    from retrofit.runner.finish import case_records, finish, reusable
    from retrofit.runner.sweep_config import case_from_hydra, check_seed_selections

    cfg, hydra_cfg = job.settings, job.hydra_cfg
    if hydra_cfg.mode == RunMode.MULTIRUN:  # the callback checks before and aggregates after
        run_case(case_from_hydra(cfg, hydra_cfg))
        return
    with runner.collected_notices() as notices:
        case = case_from_hydra(cfg, hydra_cfg)
        check_seed_selections([(cfg, case)])  # a list without this case's seed would take no effect
        reference = reference_of(cfg, job.base_dir)  # read before the run writes anything
        reused = runner.reused(reusable([case]), len(case.units))
        rows = run_case(case)
    log_file = str(Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log")
    records = case_records(case, rows)  # checked against the reference: this run's own rows
    paths = {case.host: case.host_path}
    finish(
        results_dir_of(cfg, hydra_cfg),
        records,
        log_file,
        reused,
        keep=True,
        reference=reference,
        notices=notices,
        host_paths=paths,
    )


class CheckSweep(Callback):
    """The sweep's Hydra callback (`hydra.callbacks.check_sweep` of `configs/sweep.yaml`): reject an
    invalid sweep before anything runs; say how many units the store already holds; the sweep's
    results, headline table and reproduction check after the last job
    (`retrofit.runner.sweep_config`, imported only by a multirun, so a single run's checks come
    before any model loads)."""

    def __init__(self) -> None:
        self.cases: list[Case] = []
        self.reference: Reference | None = None
        self.reused = ""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from retrofit.runner.finish import reusable
        from retrofit.runner.sweep_config import checked_sweep

        with callback_errors():
            self.cases, self.reference = checked_sweep(config)
            total = len({case.key(unit) for case in self.cases for unit in case.units})
            self.reused = runner.reused(reusable(self.cases), total)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from retrofit.runner.sweep_config import finish_sweep

        with callback_errors():
            finish_sweep(config, self.cases, self.reference, self.reused)


if __name__ == "__main__":
    launch("sweep")
