"""predict_many vs sequential predict on the benchmark's cases -> results/bench_batch.csv
(`configs/bench_batch.yaml`)."""

import logging
import statistics
from dataclasses import dataclass

import torch
from omegaconf import MISSING, DictConfig

from retrofit.batching import ForwardCost, batched_tables, bucket_members, member_inputs
from retrofit.jobs.cases import CasesConfig, fitted_cases
from retrofit.jobs.start import start
from retrofit.measure.batch_bench import bench_batch, sequential_seconds_by_table
from retrofit.patching import retrofit


@dataclass
class BenchBatchConfig(CasesConfig):
    """The schema of `configs/bench_batch.yaml` (each key's role is written there)."""

    variant: str = MISSING
    rounds: int = MISSING
    threads: int = MISSING
    output: str = MISSING


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Time predict_many against one predict after another on every fitted case of `cfg`, write
    the rounds and print the speed-up (and, below 1.5x, where the time goes)."""
    job = start(cfg, hydra_cfg, BenchBatchConfig, "configs/bench_batch.yaml")
    settings: BenchBatchConfig = job.settings
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    torch.set_num_threads(settings.threads)
    (output,) = job.outputs(settings.output)
    cases = fitted_cases(job)
    pairs = [(retrofit(case.regressor, settings.variant), case.X_test) for case in cases]
    table = bench_batch(settings.host, pairs, settings.rounds)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3f"))
    members = [m for i, (regressor, X) in enumerate(pairs) for m in member_inputs(i, regressor, X)]
    cost = ForwardCost.calibrated(pairs[0][0])
    batched = batched_tables(members, cost)
    forwards = len(bucket_members([m for m in members if m.pair in batched])) + len(pairs) - len(batched)
    print(
        f"predict_many batched {len(batched)} of {len(pairs)} tables ({forwards} forwards; fixed cost per forward "
        f"measured as {cost.overhead:.3g} multiply-adds, {cost.overhead / cost.work((100, 30, 8)):.2f}x the work "
        "of a 100 x 8 table with 30 test rows)"
    )
    speedup = statistics.median(table.speedup)
    print(
        f"predict_many speed-up over sequential predict: median {speedup:.2f}x "
        f"(min {table.speedup.min():.2f}, max {table.speedup.max():.2f}) over {len(table)} interleaved rounds"
    )
    if speedup < 1.5:
        share = statistics.median(table.preprocess_seconds / table.predict_many_seconds)
        print(
            f"where predict_many's time goes: test-row preprocessing {share:.0%} (tabpfn's per-member pipeline, "
            f"the same on both sides), forward passes and post-processing {1 - share:.0%}"
        )
        by_table = sequential_seconds_by_table(pairs)
        by_dataset = {case.name: 0.0 for case in cases}
        for case, seconds in zip(cases, by_table, strict=True):
            by_dataset[case.name] += seconds
        total = sum(by_table)
        print(
            "sequential predict time by dataset (one call per table): "
            + ", ".join(f"{name} {seconds:.1f}s ({seconds / total:.0%})" for name, seconds in by_dataset.items())
        )
    print(f"wrote {output}")
