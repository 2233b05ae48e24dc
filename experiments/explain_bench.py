"""Removal explanations, closed removal vs a refit per coalition vs zeroing ->
results/removal_{bench,stages}.* (`make explain-bench`; `configs/explain_bench.yaml`, `benchmarks.removal_vs_refit`)."""

import dataclasses
import logging
from pathlib import Path

from omegaconf import DictConfig

from benchmarks.removal_vs_refit.explain_settings import ExplainBenchConfig
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart, job_device

SCHEMA = ExplainBenchConfig


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Explain every dataset of `cfg` by every method on every host; write the tables and plots
    (each checked writable here first) and print the table."""
    from benchmarks.removal_vs_refit.explain_table import run as explain_benchmark
    from retrofit.runner.config import dataset_specs

    logging.getLogger("retrofit").setLevel(logging.INFO)
    settings = ExplainBenchConfig.from_config(cfg)
    device = job_device(settings.device)  # before any work: device=cuda without CUDA is one line
    settings = dataclasses.replace(settings, device=device)
    job = JobStart(settings, Path(hydra_cfg.runtime.cwd), hydra_cfg, device)
    job.outputs(settings.output, settings.plot, settings.example_plot, settings.stages_output)
    table, _ = explain_benchmark(settings, dataset_specs(hydra_cfg, settings.datasets), job.base_dir)
    print(table.to_string(index=False, float_format="%.3g"))


if __name__ == "__main__":
    launch("explain_bench")
