"""How every job starts: its config checked against its schema, where the command was started, and
its output files resolved there and checked against the record guard, before any work.

    job = start(cfg, hydra_cfg, PaddingDemoConfig, "configs/padding_demo.yaml")
    (output,) = job.outputs(job.settings.output)   # RunnerError if results/ may not be written
    cases = fitted_cases(job)                      # for a CasesConfig: the fitted benchmark cases
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf

from retrofit.fitting import FittedCase, fit_cases
from retrofit.hosts import get_path
from retrofit.runner.config import dataset_specs, job_config, resolve
from retrofit.runner.guard import check_record_outputs


@dataclass(frozen=True)
class JobStart:
    """A job's checked `settings` (its schema's object, or the checked DictConfig), the directory
    the command was started in (`base_dir`, what relative paths mean) and its Hydra config."""

    settings: Any
    base_dir: Path
    hydra_cfg: DictConfig

    def outputs(self, *paths: str | Path) -> list[Path]:
        """`paths` resolved against `base_dir`; RunnerError (`retrofit.runner.guard`) if any lies in
        the committed results/ and this is not its make target's default run."""
        resolved = [resolve(self.base_dir, path) for path in paths]
        check_record_outputs(resolved, self.hydra_cfg.overrides.task)
        return resolved


def start(cfg: DictConfig, hydra_cfg: DictConfig, schema: type, where: str, *, as_object: bool = True) -> JobStart:
    """The `JobStart` of the composed root config `cfg` with `schema` (`job_config`: a key added by
    `+key=value` is refused by name); `settings` is a `schema` instance unless `as_object` is false."""
    checked = job_config(cfg, schema, where)
    settings = OmegaConf.to_object(checked) if as_object else checked
    return JobStart(settings, Path(hydra_cfg.runtime.cwd), hydra_cfg)


@dataclass
class CasesConfig:
    """The keys of a job measured on fitted benchmark cases: the shipped `host` fitted with
    `n_estimators` members on each of `datasets` (options of `configs/dataset/`; the default list
    is `benchmark_datasets`) × `seeds`."""

    benchmark_datasets: str = MISSING
    host: str = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING


def fitted_cases(job: JobStart) -> list[FittedCase]:
    """Every case of a `CasesConfig` job, loaded, split and fitted (`retrofit.fitting.fit_cases`)."""
    settings: CasesConfig = job.settings
    datasets = dataset_specs(job.hydra_cfg, settings.datasets)
    return fit_cases(
        get_path(settings.host), datasets, settings.seeds, base_dir=job.base_dir, n_estimators=settings.n_estimators
    )
