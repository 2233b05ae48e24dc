"""How every job starts: its config checked against its schema, where the command was started, and
its output files resolved there and checked against the record guard, before any work.

    job = start(cfg, hydra_cfg, PaddingDemoConfig, "configs/padding_demo.yaml")
    (output,) = job.outputs(job.settings.output)   # RunnerError if results/ may not be written

It imports no model: the benchmark jobs measured on fitted cases add `benchmarks.jobs.cases`.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from retrofit.record_guard import check_record_outputs
from retrofit.runner.schema import job_config, resolve


@dataclass(frozen=True)
class JobStart:
    """A job's checked `settings` (its schema's object, or the checked DictConfig), the directory
    the command was started in (`base_dir`, what relative paths mean) and its Hydra config."""

    settings: Any
    base_dir: Path
    hydra_cfg: DictConfig

    def outputs(self, *paths: str | Path) -> list[Path]:
        """`paths` resolved against `base_dir`; RunnerError (`retrofit.record_guard`) if any lies in
        the committed results/ and this is not its make target's run."""
        resolved = [resolve(self.base_dir, path) for path in paths]
        check_record_outputs(resolved)
        return resolved


def start(cfg: DictConfig, hydra_cfg: DictConfig, schema: type, where: str, *, as_object: bool = True) -> JobStart:
    """The `JobStart` of the composed root config `cfg` with `schema` (`job_config`: a key added by
    `+key=value` is refused by name); `settings` is a `schema` instance unless `as_object` is false."""
    checked = job_config(cfg, schema, where)
    settings = OmegaConf.to_object(checked) if as_object else checked
    return JobStart(settings, Path(hydra_cfg.runtime.cwd), hydra_cfg)
