"""Removal explanations: closed removal vs a refit per coalition vs zeroing ->
results/removal_{bench,stages}.* (`configs/explain_bench.yaml`, `retrofit.removal.bench`)."""

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import MISSING, DictConfig, OmegaConf

from retrofit.removal.bench import ExplainBenchConfig
from retrofit.removal.bench import run as run_bench
from retrofit.runner.config import dataset_specs
from retrofit.runner.guard import check_record_outputs
from retrofit.runner.schema import job_config


@dataclass
class ExplainBenchRootConfig(ExplainBenchConfig):
    """The schema of `configs/explain_bench.yaml`: the benchmark's settings and the shared dataset
    list (`configs/benchmark/`) its `datasets` are read from."""

    benchmark_datasets: str = MISSING


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Explain every dataset of `cfg` by every method, write the table and plots and print the table."""
    logging.getLogger("retrofit").setLevel(logging.INFO)
    settings = OmegaConf.to_container(
        job_config(cfg, ExplainBenchRootConfig, "configs/explain_bench.yaml"), resolve=True
    )
    settings.pop("benchmark_datasets")  # the shared list `datasets` was read from
    base_dir = Path(hydra_cfg.runtime.cwd)
    keys = ("output", "plot", "example_plot", "stages_output")
    outputs = [base_dir / settings[key] for key in keys if settings.get(key)]
    check_record_outputs(outputs)
    datasets = dataset_specs(hydra_cfg, settings["datasets"])
    table, _ = run_bench(OmegaConf.create(settings), datasets, base_dir)
    print(table.to_string(index=False, float_format="%.3g"))
