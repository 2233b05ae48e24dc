"""A sweep's results from the unit store alone (`experiments/aggregate.py`, `configs/aggregate.yaml`):
each job of the command, composed from the sweep's own overrides, names its units through its
manifest (`retrofit.runner.collect`), so no case is built and no model imported; a job without a
manifest or a unit without a current result is named and nothing is written.

`run` aggregates the one job of a single run into its `results_dir`, with the rows already there;
`AggregateSweep`, a multirun's callback, writes exactly the sweep's units after Hydra has launched
its (empty) jobs.
"""

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from retrofit.errors import exit_on_any_error
from retrofit.runner import console
from retrofit.runner.aggregate import aggregate, headline, noise_floors, outputs
from retrofit.runner.collect import current_records, finish_sweep, job_manifests
from retrofit.runner.compare import verify
from retrofit.runner.compose import sweep_job_configs
from retrofit.runner.record import UnitRecord
from retrofit.runner.schema import SweepConfig, job_config, reference_of, results_dir_of, runs_dir


def job_records(jobs: list[tuple[DictConfig, DictConfig]]) -> list[UnitRecord]:
    """The current records of every unit of each job (its composed config, its Hydra config), read
    through the jobs' manifests; RunnerError naming a job without a manifest or a unit without a
    current result."""
    for cfg, _ in jobs:
        job_config(cfg, SweepConfig, "configs/config.yaml")  # a key added by +key=value is refused
    stores = [runs_dir(cfg, Path(hydra_cfg.runtime.cwd)) for cfg, hydra_cfg in jobs]
    return current_records(zip(job_manifests(jobs), stores, strict=True))


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Aggregate the one job `cfg` describes into its `results_dir` (with the rows of other units
    already there) and check it against `reference` when given."""
    results_dir = results_dir_of(cfg, hydra_cfg)
    reference = reference_of(cfg, Path(hydra_cfg.runtime.cwd))
    frame = aggregate(results_dir, job_records([(cfg, hydra_cfg)]), keep=True)
    written = [results_dir / name for name in outputs(frame)]
    console.report(headline(frame, noise_floors()), written, str(Path(hydra_cfg.runtime.output_dir)), [])
    if reference is not None:
        verify(results_dir, reference)


class AggregateSweep(Callback):
    """The multirun's results from its jobs' manifests, after Hydra has launched the (empty) jobs:
    the results_dir and reference are checked before, so a refused command launches nothing."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_any_error():
            results_dir_of(config, config.hydra)
            reference_of(config, Path(config.hydra.runtime.cwd))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_any_error():
            records = job_records([(job, job.hydra) for job in sweep_job_configs(config)])
            finish_sweep(config, records, reference_of(config, Path(config.hydra.runtime.cwd)))
