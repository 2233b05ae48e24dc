"""predict_many vs sequential predict on the benchmark's cases -> results/bench_batch.csv
(`make bench-batch`; `configs/bench_batch.yaml`, `benchmarks.batch_throughput`)."""

import logging
from dataclasses import dataclass

from omegaconf import MISSING, DictConfig

from benchmarks.fitted_cases import CasesConfig, fitted_cases
from retrofit.jobs import launch
from retrofit.jobs.start import start


@dataclass
class BenchBatchConfig(CasesConfig):
    """The schema of `configs/bench_batch.yaml` (each key's role is written there)."""

    variant: str = MISSING
    max_padding: float = MISSING
    rounds: int = MISSING
    threads: int = MISSING
    output: str = MISSING


CONFIG = "bench_batch"
"""Its root config, `configs/bench_batch.yaml`."""
SCHEMA = BenchBatchConfig


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Time predict_many against one predict after another on every fitted case of `cfg`, write
    the rounds and print the speed-up (and, below 1.5x, where the time goes)."""
    import torch

    from benchmarks.batch_throughput import report_lines, throughput_rounds
    from retrofit.batching import check_bounds
    from retrofit.patching import retrofit

    job = start(cfg, hydra_cfg, BenchBatchConfig, "configs/bench_batch.yaml")
    settings: BenchBatchConfig = job.settings
    check_bounds(settings.max_padding, 1)  # before the cases are fitted
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    torch.set_num_threads(settings.threads)
    (output,) = job.outputs(settings.output)
    cases = fitted_cases(job)
    pairs = [(retrofit(case.regressor, settings.variant), case.X_test) for case in cases]
    table = throughput_rounds(settings.host, pairs, settings.rounds, settings.max_padding)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3f"))
    for line in report_lines(table, pairs, [case.name for case in cases], settings.max_padding):
        print(line)
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("bench_batch")
