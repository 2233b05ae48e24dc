"""Throughput of `retrofit.predict_many` vs one `predict` after another on the benchmark's cases ->
results/bench_batch.csv (`make bench-batch`; `configs/bench_batch.yaml`).

Both sides predict the same o_closed regressors' test rows; they run in interleaved rounds after
a warm-up (`retrofit.measure.timing`: A B, B A, ...), and a round's speed-up is the sequential
time over predict_many's time in the same round. Where the time goes: each round also times
tabpfn's per-member preprocessing of the test rows alone (`retrofit.batching.member_inputs`,
which both sides do once per regressor); the rest is the forward passes and post-processing.
`report_lines` says which tables predict_many batched (`retrofit.batching.shared_buckets`) and,
below `EXPLAINED_BELOW`, where the time goes, with each table's own predict timed once.
"""

import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omegaconf import MISSING

from benchmarks.fitted_cases import CasesConfig, fitted_cases
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.labels import DEVICE_DOC

if TYPE_CHECKING:  # the models come with `run`, not with the schema
    import pandas as pd
    from tabpfn import TabPFNRegressor

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "device": DEVICE_DOC,
    "round": ("integer", "interleaved timing round (from 0)"),
    "n_tables": ("count", "regressors (tables) predicted per side"),
    "sequential_seconds": ("s", "wall seconds of one `predict` after another over the tables"),
    "predict_many_seconds": ("s", "wall seconds of one `retrofit.predict_many` call over them"),
    "speedup": ("ratio", "sequential_seconds / predict_many_seconds of the round"),
    "preprocess_seconds": ("s", "seconds of the test rows' per-member preprocessing alone (part of both sides)"),
}
"""Column -> (unit, meaning) of `results/bench_batch.csv` (one row per round), in order."""
COLUMNS = tuple(COLUMN_DOCS)

EXPLAINED_BELOW = 1.5
"""A median speed-up below this is followed by where the time goes."""


@dataclass
class BenchBatchConfig(CasesConfig):
    """The schema of `configs/bench_batch.yaml` (each key's role is written there)."""

    variant: str = MISSING
    max_padding: float = MISSING
    rounds: int = MISSING
    threads: int = MISSING
    output: str = MISSING


SCHEMA = BenchBatchConfig


def run(job: JobStart) -> None:
    """Time predict_many against one predict after another on every fitted case of `job`, write
    the rounds and print the speed-up (and, below `EXPLAINED_BELOW`, where the time goes)."""
    import torch

    from retrofit.batching import check_bounds
    from retrofit.patching import retrofit

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


def throughput_rounds(
    host: str, pairs: "Sequence[tuple[TabPFNRegressor, Any]]", rounds: int, max_padding: float
) -> "pd.DataFrame":
    """`rounds` interleaved rounds (after one warm-up each) of the three timings, predict_many with
    `max_padding`; one row per round, timed on the regressors' device (`device_clock`)."""
    import pandas as pd

    from retrofit.batching import member_inputs, predict_many
    from retrofit.hosts.device import device_clock, device_label
    from retrofit.measure.timing import interleaved_times, paired_ratios

    fns = {
        "sequential": lambda: [regressor.predict(X) for regressor, X in pairs],
        "predict_many": lambda: predict_many(pairs, max_padding=max_padding),
        "preprocess": lambda: [member_inputs(i, regressor, X) for i, (regressor, X) in enumerate(pairs)],
    }
    device = pairs[0][0].devices_[0]
    label = device_label(device)
    times = interleaved_times(fns, rounds, clock=device_clock(device))
    speedups = paired_ratios(times, "predict_many")["sequential"]
    return pd.DataFrame(
        [
            dict(zip(COLUMNS, (host, label, r, len(pairs), seq, many, speedup, pre), strict=True))
            for r, (seq, many, speedup, pre) in enumerate(
                zip(times["sequential"], times["predict_many"], speedups, times["preprocess"], strict=True)
            )
        ],
        columns=list(COLUMNS),
    )


def report_lines(
    table: "pd.DataFrame",
    pairs: "Sequence[tuple[TabPFNRegressor, Any]]",
    names: Sequence[str],
    max_padding: float,
) -> list[str]:
    """What the rounds of `throughput_rounds` (with `max_padding`) say: how many tables predict_many batched into how
    many forwards, its median speed-up with its range, and below `EXPLAINED_BELOW` where its time
    goes and the sequential time by table name (`names`: one per pair, e.g. its dataset)."""
    from retrofit.batching import cell_limit, member_inputs, shared_buckets

    members = [m for i, (regressor, X) in enumerate(pairs) for m in member_inputs(i, regressor, X)]
    limit = cell_limit(pairs[0][0])
    buckets = shared_buckets(members, max_padding=max_padding, max_cells=limit)
    batched = {m.pair for bucket in buckets for m in bucket}
    speedup = statistics.median(table.speedup)
    lines = [
        f"predict_many batched {len(batched)} of {len(pairs)} tables ({len(buckets) + len(pairs) - len(batched)} "
        f"forwards; padded work <= {max_padding}x the real work, <= {limit} cells per forward)",
        f"predict_many speed-up over sequential predict: median {speedup:.2f}x "
        f"(min {table.speedup.min():.2f}, max {table.speedup.max():.2f}) over {len(table)} interleaved rounds",
    ]
    if speedup < EXPLAINED_BELOW:
        share = statistics.median(table.preprocess_seconds / table.predict_many_seconds)
        lines.append(
            f"where predict_many's time goes: test-row preprocessing {share:.0%} (tabpfn's per-member pipeline, "
            f"the same on both sides), forward passes and post-processing {1 - share:.0%}"
        )
        by_name = dict.fromkeys(names, 0.0)
        by_table = sequential_seconds_by_table(pairs)
        for name, seconds in zip(names, by_table, strict=True):
            by_name[name] += seconds
        total = sum(by_table)
        lines.append(
            "sequential predict time by dataset (one call per table): "
            + ", ".join(f"{name} {seconds:.1f}s ({seconds / total:.0%})" for name, seconds in by_name.items())
        )
    return lines


def sequential_seconds_by_table(pairs: "Sequence[tuple[TabPFNRegressor, Any]]") -> list[float]:
    """Wall seconds of each regressor's own `predict`, one call each."""
    from retrofit.hosts.device import device_clock

    seconds = []
    for regressor, X in pairs:
        clock = device_clock(regressor.devices_[0])
        start = clock()
        regressor.predict(X)
        seconds.append(clock() - start)
    return seconds


if __name__ == "__main__":
    launch("bench_batch")
