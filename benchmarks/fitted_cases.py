"""What the experiments measured on fitted benchmark cases share (`experiments/bench_batch.py`,
`experiments/padding_demo.py`): their keys (`CasesConfig`) and the cases,
loaded, split and fitted (`fitted_cases`).

    def run(job: JobStart) -> None:   # the job's settings a `CasesConfig`
        cases = fitted_cases(job)
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from omegaconf import MISSING

from retrofit.jobs.start import JobStart

if TYPE_CHECKING:  # the models come with `fitted_cases`, not with the schema
    from retrofit.fitting import FittedCase


@dataclass
class CasesConfig:
    """The keys of a job measured on fitted benchmark cases: the shipped `host` fitted with
    `n_estimators` members on each of `datasets` (options of `configs/dataset/`; the default list
    is `benchmark_datasets`) × `seeds`, on `device` (cpu, cuda or auto; `retrofit.jobs.start`
    resolves it before any work)."""

    benchmark_datasets: str = MISSING
    host: str = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING
    device: str = MISSING


def fitted_cases(job: JobStart) -> "list[FittedCase]":
    """Every case of a `CasesConfig` job, loaded, split and fitted on `job.device` (`retrofit.fitting.fit_cases`)."""
    from retrofit.fitting import fit_cases
    from retrofit.hosts import get_path
    from retrofit.runner.sweep_config import dataset_specs

    settings: CasesConfig = job.settings
    datasets = dataset_specs(job.hydra_cfg, settings.datasets)
    return fit_cases(
        get_path(settings.host),
        datasets,
        settings.seeds,
        base_dir=job.base_dir,
        n_estimators=settings.n_estimators,
        device=job.device,
    )
