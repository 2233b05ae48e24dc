"""OAttention vs plain SDPA vs the materialised formula: time ratios, peak-memory growth.

Per case (B, R): Q = R queries, K = key_fraction * R keys, H heads of width D, float32, one
thread. Timing: methods run in interleaved rounds (the order rotates each round); a method's
time ratio is the median over rounds of its time divided by SDPA's time in the same round.
Time is the calling thread's CPU time (`time.thread_time`): with one intra-op thread the
kernels run on it, and on a shared machine wall time mostly measures the other processes.
Memory (a second pass, after all timing): one call per method, peak RSS during the call minus
RSS before it (Linux: VmHWM reset via /proc/self/clear_refs). For that pass the driver
(`experiments/bench_attention.py`) tells glibc to mmap every allocation >= 64 KiB and trim at
once, so RSS tracks live memory; it comes after the timing because per-allocation mmap would
slow allocation-heavy methods.

On a CUDA device (`BenchGrid.device`) the inputs are drawn on the CPU and moved there; time is
wall time read after `torch.cuda.synchronize()` (`retrofit.hosts.device.device_clock`: a thread's
CPU time does not count the GPU's work) and memory is torch's allocator peak growth
(`benchmarks.tools.resident_memory.peak_growth_mib`).
"""

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from benchmarks.tools.attention_inputs import AttentionInputs, random_attention_inputs
from benchmarks.tools.resident_memory import check_linux, peak_growth_mib
from retrofit.hosts.device import device_clock, is_cuda
from retrofit.measure.timing import interleaved_times, paired_ratios, torch_threads
from retrofit.ops import o_attention, o_attention_materialised

METHODS: dict[str, Callable[[AttentionInputs], torch.Tensor]] = {
    "sdpa": lambda x: F.scaled_dot_product_attention(x.q, x.k, x.v),
    "fused": lambda x: o_attention(*x.args()),
    "fused_relative": lambda x: o_attention(*x.args(), eps_mode="relative"),
    "compact": lambda x: o_attention(*x.args(), compact=True),
    "materialised": lambda x: o_attention_materialised(*x.args()),
}


@dataclass(frozen=True)
class BenchGrid:
    """The benchmark's cases (B, R) and how to draw their inputs: Q = R queries, K = key_fraction
    * R keys, H heads of width D, float32; the materialised method only where its B*H*R*K fp32
    scores stay under `materialised_max_bytes`."""

    batch_sizes: tuple[int, ...]
    rows: tuple[int, ...]
    n_heads: int
    head_dim: int
    key_fraction: float
    null_fraction: float
    materialised_max_bytes: float
    seed: int
    device: str = "cpu"

    def cases(self) -> list[tuple[int, int]]:
        return [(B, R) for B in self.batch_sizes for R in self.rows]

    def inputs(self, B: int, R: int) -> AttentionInputs:
        return random_attention_inputs(
            B,
            self.n_heads,
            self.n_heads,
            R,
            int(self.key_fraction * R),
            self.head_dim,
            dtype=torch.float32,
            score_std=1.0,
            null_fraction=self.null_fraction,
            generator=torch.Generator().manual_seed(self.seed),
        ).to(self.device)

    def methods(self, B: int, R: int) -> list[str]:
        K = int(self.key_fraction * R)
        return [
            n for n in METHODS if n != "materialised" or B * self.n_heads * R * K * 4 <= self.materialised_max_bytes
        ]


def time_table(grid: BenchGrid, seconds_per_case: float, min_repeats: int, max_repeats: int) -> pd.DataFrame:
    """One row per (B, R): SDPA's median time and each method's median time ratio to SDPA, one thread.

    Rounds per case: seconds_per_case / (first round's time), clamped to [min_repeats, max_repeats].
    """
    with torch_threads(1):
        return pd.DataFrame(
            [_time_case(grid, B, R, seconds_per_case, min_repeats, max_repeats) for B, R in grid.cases()]
        )


def memory_table(grid: BenchGrid) -> pd.DataFrame:
    """One row per (B, R): each method's peak RSS growth in one call (MiB) and the output size.

    RSS tracks live tensor memory only if the process serves large allocations with mmap and trims
    at once (the driver sets that up with glibc's mallopt, after timing). Needs Linux. On CUDA: torch's
    allocator peak growth.
    """
    if not is_cuda(grid.device):
        check_linux()
    cases = grid.cases()
    return pd.DataFrame([_memory_case(grid.inputs(B, R), grid.methods(B, R), grid.device) for B, R in cases])


def _time_case(grid: BenchGrid, B: int, R: int, seconds_per_case: float, min_repeats: int, max_repeats: int) -> dict:
    x = grid.inputs(B, R)
    fns = {name: (lambda name=name: METHODS[name](x)) for name in grid.methods(B, R)}
    times = interleaved_times(
        fns,
        lambda first: max(min_repeats, min(max_repeats, int(seconds_per_case / first))),
        clock=device_clock(grid.device, time.thread_time),
    )
    ratios = paired_ratios(times, "sdpa")
    row = {"B": B, "R": R, "K": x.k.shape[2], "rounds": len(times["sdpa"])}
    row["sdpa_ms"] = 1e3 * statistics.median(times["sdpa"])
    for name in METHODS:
        row[f"{name}_time_ratio"] = statistics.median(ratios[name]) if name in ratios else float("nan")
    return row


def _memory_case(x: AttentionInputs, names: list[str], device: str) -> dict:
    B, H, R, D = x.q.shape
    row = {"output_mib": B * H * R * D * 4 / 2**20}
    row |= {
        f"{name}_mem_mib": peak_growth_mib(lambda name=name: METHODS[name](x), device)
        if name in names
        else float("nan")
        for name in METHODS
    }
    return row
