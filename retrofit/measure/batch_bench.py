"""Throughput of `retrofit.predict_many` vs one `predict` after another (`experiments/bench_batch.py`).

Both sides predict the same o_closed regressors' test rows; they run in interleaved rounds after
a warm-up (`retrofit.measure.timing`: A B, B A, ...), and a round's speed-up is the sequential
time over predict_many's time in the same round. Where the time goes: each round also times
tabpfn's per-member preprocessing of the test rows alone (`retrofit.batching.member_inputs`,
which both sides do once per regressor); the rest is the forward passes and post-processing.
`sequential_seconds_by_table` times each regressor's own predict once, after the rounds.
"""

import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
from tabpfn import TabPFNRegressor

from retrofit.batching import member_inputs, predict_many
from retrofit.measure.timing import interleaved_times, paired_ratios

COLUMNS = ("host", "round", "n_tables", "sequential_seconds", "predict_many_seconds", "speedup", "preprocess_seconds")
"""Per round: wall seconds of each side, `speedup` = sequential / predict_many, and the seconds
of the test rows' preprocessing alone (part of both sides)."""


def bench_batch(host: str, pairs: Sequence[tuple[TabPFNRegressor, Any]], rounds: int) -> pd.DataFrame:
    """`rounds` interleaved rounds (after one warm-up each) of the three timings; one row per round."""
    fns = {
        "sequential": lambda: [regressor.predict(X) for regressor, X in pairs],
        "predict_many": lambda: predict_many(pairs),
        "preprocess": lambda: [member_inputs(i, regressor, X) for i, (regressor, X) in enumerate(pairs)],
    }
    times = interleaved_times(fns, rounds, clock=time.perf_counter)
    speedups = paired_ratios(times, "predict_many")["sequential"]
    return pd.DataFrame(
        [
            dict(zip(COLUMNS, (host, r, len(pairs), seq, many, speedup, pre), strict=True))
            for r, (seq, many, speedup, pre) in enumerate(
                zip(times["sequential"], times["predict_many"], speedups, times["preprocess"], strict=True)
            )
        ],
        columns=list(COLUMNS),
    )


def sequential_seconds_by_table(pairs: Sequence[tuple[TabPFNRegressor, Any]]) -> list[float]:
    """Wall seconds of each regressor's own `predict`, one call each."""
    seconds = []
    for regressor, X in pairs:
        start = time.perf_counter()
        regressor.predict(X)
        seconds.append(time.perf_counter() - start)
    return seconds
