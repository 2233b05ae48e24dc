"""OAttention vs plain SDPA vs the materialised formula, one thread; prints ratios (`make bench`;
`configs/bench_attention.yaml`, `benchmarks.attention_speed`)."""

from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart


@dataclass
class BenchConfig:
    """The schema of `configs/bench_attention.yaml` (each key's role is written there)."""

    seed: int = MISSING
    batch_sizes: list[int] = MISSING
    rows: list[int] = MISSING
    key_fraction: float = MISSING
    n_heads: int = MISSING
    head_dim: int = MISSING
    null_fraction: float = MISSING
    seconds_per_case: float = MISSING
    min_repeats: int = MISSING
    max_repeats: int = MISSING
    materialised_max_bytes: float = MISSING
    goal_ratio_small: float = MISSING
    goal_ratio_large: float = MISSING
    goal_small_rows: int = MISSING
    goal_ratio_relative: float = MISSING
    device: str = MISSING


SCHEMA = BenchConfig


def run(job: JobStart) -> None:
    """Time and memory-probe the grid of `job` and print the table with its goals (no file)."""
    from benchmarks.attention_speed import BenchGrid, memory_table, time_table
    from benchmarks.tools.resident_memory import make_rss_track_live_memory
    from retrofit.hosts.device import device_label

    settings: BenchConfig = job.settings
    fields = [key for key in BenchGrid.__dataclass_fields__ if key != "device"]
    grid = BenchGrid(**{key: _frozen(getattr(settings, key)) for key in fields}, device=job.device)
    times = time_table(grid, settings.seconds_per_case, settings.min_repeats, settings.max_repeats)
    make_rss_track_live_memory()
    table = times.join(memory_table(grid))
    small = settings.goal_small_rows
    goal = table.R.map(lambda R: settings.goal_ratio_small if small >= R else settings.goal_ratio_large)
    table["fused_meets_goal"] = table.fused_time_ratio <= goal
    table["fused_relative_meets_goal"] = table.fused_relative_time_ratio <= settings.goal_ratio_relative
    clock = "thread CPU time" if job.device == "cpu" else "synchronized wall time"
    print(f"device: {device_label(job.device)}")
    print(f"time ratios: method / plain SDPA, {clock}, median of interleaved paired rounds, 1 thread;")
    print("*_mem_mib: peak growth of live tensor memory in one call; output_mib: the (B, H, R, D) fp32 output")
    print(
        f"null_fraction={settings.null_fraction}: sdpa, fused and materialised attend to every key; compact skips nulls"
    )
    print(table.to_string(index=False, float_format="%.3f"))


def _frozen(value):
    """A list setting as the tuple `BenchGrid` holds; anything else as it is."""
    return tuple(value) if isinstance(value, list) else value


if __name__ == "__main__":
    launch("bench_attention")
