"""Removal explanations, closed removal vs a refit per coalition vs zeroing ->
results/removal_{bench,stages}.* (`make explain-bench`; `configs/explain_bench.yaml`, `benchmarks.removal_vs_refit`)."""

import dataclasses
import logging

from benchmarks.removal_vs_refit.explain_settings import ExplainBenchConfig
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

SCHEMA = ExplainBenchConfig


def run(job: JobStart) -> None:
    """Explain every dataset of `job` by every method on every host; write the tables and plots
    (each checked writable here first) and print the table."""
    from benchmarks.removal_vs_refit.explain_table import run as explain_benchmark
    from retrofit.runner.sweep_config import dataset_specs

    logging.getLogger("retrofit").setLevel(logging.INFO)
    settings = dataclasses.replace(ExplainBenchConfig.from_config(job.settings), device=job.device)
    job.outputs(settings.output, settings.plot, settings.example_plot, settings.stages_output)
    table, _ = explain_benchmark(settings, dataset_specs(job.hydra_cfg, settings.datasets), job.base_dir)
    print(table.to_string(index=False, float_format="%.3g"))


if __name__ == "__main__":
    launch("explain_bench")
