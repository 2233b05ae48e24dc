"""Each host's noise floor -> `output` (`configs/noise_floor.yaml`; `benchmarks.noise_floor`):
the shipped `hosts`, or the one host chosen with `host=<option>` (`host=checkpoint host.path=...`)."""

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import MISSING, DictConfig

from retrofit.jobs.start import start
from retrofit.runner.schema import HostConfig


@dataclass
class NoiseFloorConfig:
    """The schema of `configs/noise_floor.yaml` (each key's role is written there)."""

    benchmark_datasets: str = MISSING
    host: HostConfig | None = None
    hosts: list[str] = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING
    output: str = MISSING


CONFIG = "noise_floor"
"""Its root config, `configs/noise_floor.yaml`."""
SCHEMA = NoiseFloorConfig


def host_paths(settings: NoiseFloorConfig, base_dir: Path) -> dict[str, Path]:
    """Host label -> checkpoint: the chosen `host` alone (its `path`, relative to `base_dir`; null:
    the shipped host of its `name`), else every shipped host of `hosts`."""
    from retrofit.hosts import check_checkpoint, get_path

    if settings.host is None:
        return {name: get_path(name) for name in settings.hosts}
    host = settings.host
    return {host.name: get_path(host.name) if host.path is None else check_checkpoint(host.path, base_dir=base_dir)}


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Measure every host's movements on every dataset x seed of `cfg`; write the per-source table and print it."""
    from benchmarks.noise_floor import measure, summarise
    from retrofit.runner.config import dataset_specs

    job = start(cfg, hydra_cfg, NoiseFloorConfig, "configs/noise_floor.yaml")
    settings: NoiseFloorConfig = job.settings
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    logging.getLogger("benchmarks.noise_floor").setLevel(logging.INFO)  # one line per host and case
    hosts = host_paths(settings, job.base_dir)
    (output,) = job.outputs(settings.output)
    datasets = dataset_specs(hydra_cfg, settings.datasets)
    movements = measure(hosts, datasets, settings.seeds, settings.n_estimators, base_dir=job.base_dir)
    table = summarise(movements)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.3g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(f"wrote {output}")
