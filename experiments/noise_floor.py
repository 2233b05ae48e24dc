"""Each host's noise floor, its stock RMSE under changes that should not matter -> `output`
(`make noise-floor`: results/noise_floor.csv; `configs/noise_floor.yaml`; `benchmarks.floor_movements`):
the shipped `hosts` on `datasets`, or the one host chosen with `host=<option>` (`host=checkpoint
host.path=...`) and the one dataset chosen with `dataset=<option>` (`dataset=csv dataset.path=...
dataset.target=...`), on `device`."""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig

from retrofit.errors import RunnerError
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import HostConfig, command_overrides


@dataclass
class NoiseFloorConfig:
    """The schema of `configs/noise_floor.yaml` (each key's role is written there); `dataset` is
    checked by `retrofit.data.DatasetSpec` (its keys depend on its source)."""

    benchmark_datasets: str = MISSING
    host: HostConfig | None = None
    dataset: dict[str, Any] | None = None
    hosts: list[str] = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING
    device: str = MISSING
    output: str = MISSING


SCHEMA = NoiseFloorConfig


def host_paths(settings: NoiseFloorConfig, base_dir: Path) -> dict[str, Path]:
    """Host label -> checkpoint: the chosen `host` alone (its `path`, relative to `base_dir`; null:
    the shipped host of its `name`), else every shipped host of `hosts`."""
    from retrofit.hosts import check_checkpoint, get_path

    if settings.host is None:
        return {name: get_path(name) for name in settings.hosts}
    host = settings.host
    return {host.name: get_path(host.name) if host.path is None else check_checkpoint(host.path, base_dir=base_dir)}


def chosen_datasets(settings: NoiseFloorConfig, hydra_cfg: DictConfig) -> list:
    """The `DatasetSpec` of the chosen `dataset` alone, else of every option in `datasets`;
    RunnerError when the command sets both."""
    from omegaconf import OmegaConf

    from retrofit.runner.sweep_config import dataset_file, dataset_spec, dataset_specs

    if settings.dataset is None:
        return dataset_specs(hydra_cfg, settings.datasets)
    listed = [o for o in command_overrides(hydra_cfg) if o.split("=", 1)[0].lstrip("+~") == "datasets"]
    if listed:
        raise RunnerError(
            f"dataset={hydra_cfg.runtime.choices.dataset} measures that one dataset, but {listed[0]!r} lists others "
            "too; pass either dataset=<option> (or dataset=csv dataset.path=...) or datasets=[...], not both"
        )
    node = OmegaConf.create(settings.dataset)
    return [dataset_spec(node, dataset_file(hydra_cfg, hydra_cfg.runtime.choices.dataset))]


def run(job: JobStart) -> None:
    """Measure every host's movements on every dataset x seed of `job` on its device; write the
    per-source table (kept beside the rows of other hosts and devices already in `output`) and
    print this run's rows."""
    from benchmarks.floor_movements import measure, summarise
    from retrofit.io import write_atomic
    from retrofit.measure.floor_table import merged

    settings: NoiseFloorConfig = job.settings
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    logging.getLogger("benchmarks.floor_movements").setLevel(logging.INFO)  # one line per host and case
    hosts = host_paths(settings, job.base_dir)
    (output,) = job.outputs(settings.output)
    datasets = chosen_datasets(settings, job.hydra_cfg)
    movements = measure(
        hosts, datasets, settings.seeds, settings.n_estimators, base_dir=job.base_dir, device=job.device
    )
    table = summarise(movements)
    written, kept = merged(table, output)
    write_atomic(output, lambda tmp: written.to_csv(tmp, index=False, float_format="%.3g"))
    print(table.to_string(index=False, float_format="%.3g"))
    print(f"wrote {output}" + (f" (kept its {kept} rows of other hosts or devices)" if kept else ""))


if __name__ == "__main__":
    launch("noise_floor")
