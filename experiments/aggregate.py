"""A sweep's results from its stored units, nothing run (the sweep's `configs/sweep.yaml` and
command line, `OVERRIDES` appended): e.g. after an interrupted run, or after SLURM jobs that wrote
into a shared cache_dir.

    python experiments/aggregate.py -m <the sweep's own overrides> [reference=<csv>]
    python experiments/aggregate.py -m +experiment=paper_table cache_dir=/shared/fs/.cache
    -> retrofit_rmse.csv, retrofit_table.md, the plots (and decomposition files) in <results_dir>;
       with reference: reproduction.txt, non-zero exit unless every row reproduces that CSV

It takes the sweep's command line and aggregates exactly that sweep's units (as the sweep does at
its end), whatever else the cache holds: each job of the command, composed from the run's own
overrides, is built as its case (its data's and host file's digests read, nothing fitted) and
names its units by their identities (`retrofit.runner.finish.sweep_records`); a unit without a
stored result is named and nothing is written.

`run` aggregates the one case of a single run (no -m) into its `results_dir`, with the rows already
there; `AggregateSweep`, a multirun's callback, writes the sweep's units (with the rows already
there, as the sweep does) after Hydra has launched its (empty) jobs.
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

CONFIG = "sweep"
"""The sweep's root config, `configs/sweep.yaml`: the same command line names the same cases."""
SCHEMA = SweepConfig
AS_OBJECT = False
OVERRIDES = [
    "hydra.callbacks.check_sweep._target_=experiments.aggregate.AggregateSweep",
    "hydra.job.name=aggregate",
]
"""Appended to the command line: a multirun reads its cases' stored units (`AggregateSweep`) in place
of running them, and logs under outputs/aggregate/."""

if TYPE_CHECKING:
    from retrofit.results.reproduction import Reference
    from retrofit.runner.case import Case


def run(job: JobStart) -> None:
    """Aggregate the one case `job` describes into its `results_dir` (with the rows of other
    units already there) and check it against `reference` when given; a multirun's job does nothing
    (its callback aggregates at the end)."""
    cfg, hydra_cfg = job.settings, job.hydra_cfg
    if hydra_cfg.mode == RunMode.MULTIRUN:
        return
    from retrofit.runner.finish import finish, sweep_records
    from retrofit.runner.sweep_config import case_from_hydra

    with runner.collected_notices() as notices:
        case = case_from_hydra(cfg, hydra_cfg)
    reference = reference_of(cfg, job.base_dir)
    records = sweep_records([case])
    log_file = str(Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log")
    reused = runner.reused(len(records), len(records))
    finish(results_dir_of(cfg, hydra_cfg), records, log_file, reused, keep=True, reference=reference, notices=notices)


class AggregateSweep(Callback):
    """The multirun's results from its cases' stored units, after Hydra has launched the (empty)
    jobs: the cases, results_dir and reference are checked before, so a refused command launches nothing."""

    def __init__(self) -> None:
        self.cases: list[Case] = []
        self.reference: Reference | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from retrofit.runner.sweep_config import checked_sweep

        with callback_errors():
            self.cases, self.reference = checked_sweep(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from retrofit.runner.sweep_config import finish_sweep

        with callback_errors():
            total = len({case.key(unit) for case in self.cases for unit in case.units})
            finish_sweep(config, self.cases, self.reference, runner.reused(total, total))


if __name__ == "__main__":
    launch("aggregate")
