"""OAttention vs plain SDPA vs the materialised formula on CPU: time ratios, peak-memory growth.

Per case (B, R): Q = R queries, K = key_fraction * R keys, H heads of width D, float32, one
thread. Timing: methods run in interleaved rounds (the order rotates each round); a method's
time ratio is the median over rounds of its time divided by SDPA's time in the same round.
Time is the calling thread's CPU time (`time.thread_time`): with one intra-op thread the
kernels run on it, and on a shared machine wall time mostly measures the other processes.
Memory (a second pass, after all timing): one call per method, peak RSS during the call minus
RSS before it (Linux: VmHWM reset via /proc/self/clear_refs). For that pass glibc is told to
mmap every allocation >= 64 KiB and trim at once, so RSS tracks live memory; it comes after
the timing because per-allocation mmap would slow allocation-heavy methods.
"""

import ctypes
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from retrofit.ops import o_attention, o_attention_materialised
from retrofit.ops_experiments.inputs import AttentionInputs, random_attention_inputs

METHODS: dict[str, Callable[[AttentionInputs], torch.Tensor]] = {
    "sdpa": lambda x: F.scaled_dot_product_attention(x.q, x.k, x.v),
    "fused": lambda x: o_attention(*x.args()),
    "compact": lambda x: o_attention(*x.args(), compact=True),
    "materialised": lambda x: o_attention_materialised(*x.args()),
}
PROC_STATUS, CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def bench_table(batch_sizes: list[int], rows: list[int], n_heads: int, head_dim: int, key_fraction: float,
                null_fraction: float, seconds_per_case: float, min_repeats: int, max_repeats: int,
                materialised_max_bytes: float, seed: int) -> pd.DataFrame:
    """One row per (B, R): SDPA's median time, each method's time ratio and memory growth (MiB).

    `materialised` is skipped (NaN) where its B*H*R*K fp32 scores exceed materialised_max_bytes.
    """
    if not CLEAR_REFS.exists():
        raise RuntimeError("bench: peak-memory growth needs Linux (/proc/self/clear_refs, VmHWM).")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        def case_inputs(B, R):
            return random_attention_inputs(B, n_heads, n_heads, R, int(key_fraction * R), head_dim,
                                           dtype=torch.float32, score_std=1.0, null_fraction=null_fraction,
                                           generator=torch.Generator().manual_seed(seed))

        def methods(B, R):
            K = int(key_fraction * R)
            return [n for n in METHODS if n != "materialised" or B * n_heads * R * K * 4 <= materialised_max_bytes]

        cases = [(B, R) for B in batch_sizes for R in rows]
        for method in METHODS.values():  # warm-up: first-call dispatch and allocation
            method(case_inputs(1, 64))
        table = pd.DataFrame([_time_case(case_inputs(B, R), methods(B, R), seconds_per_case, min_repeats, max_repeats)
                              for B, R in cases])
        _make_rss_track_live_memory()
        memory = pd.DataFrame([_memory_case(case_inputs(B, R), methods(B, R)) for B, R in cases])
        return pd.concat([table, memory], axis=1)
    finally:
        torch.set_num_threads(threads)


def _time_case(x: AttentionInputs, names: list[str], seconds_per_case: float, min_repeats: int,
               max_repeats: int) -> dict:
    """Interleaved rounds; their number = seconds_per_case / (first round's time), clamped to
    [min_repeats, max_repeats]."""
    times = {name: [] for name in names}
    n_rounds, r = 1, 0
    while r < n_rounds:
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.thread_time()
            METHODS[name](x)
            times[name].append(time.thread_time() - start)
        if r == 0:
            n_rounds = max(min_repeats, min(max_repeats, int(seconds_per_case / sum(t[0] for t in times.values()))))
        r += 1
    B, H, R, D = x.q.shape
    row = {"B": B, "R": R, "K": x.k.shape[2], "rounds": n_rounds, "sdpa_ms": 1e3 * statistics.median(times["sdpa"])}
    for name in METHODS:
        paired = [t / t_sdpa for t, t_sdpa in zip(times.get(name, []), times["sdpa"])]
        row[f"{name}_time_ratio"] = statistics.median(paired) if paired else float("nan")
    return row


def _memory_case(x: AttentionInputs, names: list[str]) -> dict:
    B, H, R, D = x.q.shape
    row = {"output_mib": B * H * R * D * 4 / 2**20}
    row |= {f"{name}_mem_mib": _peak_growth_mib(lambda: METHODS[name](x)) if name in names else float("nan")
            for name in METHODS}
    return row


def _peak_growth_mib(fn: Callable[[], torch.Tensor]) -> float:
    """Peak RSS growth (MiB) during one call of fn, its result included."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand back memory freed before the call
    CLEAR_REFS.write_text("5")  # reset VmHWM to the current RSS
    before = _status_kib("VmRSS")
    out = fn()
    peak = _status_kib("VmHWM")
    del out
    return (peak - before) / 1024


def _status_kib(field: str) -> int:
    line = next(line for line in PROC_STATUS.read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1])


def _make_rss_track_live_memory() -> None:
    """glibc: serve allocations >= 64 KiB with mmap and return freed memory at once."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 1 << 16)
    libc.mallopt(m_trim_threshold, 1 << 16)
