"""The attention benchmark's entry point (`experiments/bench_attention.py`, `benchmarks.attention_speed`)."""

import pytest
from processes import run_entry_point


@pytest.mark.slow
def test_bench_entry_point_prints_ratios(tmp_path):
    """In a subprocess: the benchmark changes process-wide allocator settings for its memory pass."""
    overrides = ["batch_sizes=[1]", "rows=[32]", "seconds_per_case=0", "min_repeats=1", "max_repeats=1"]
    run = run_entry_point("bench_attention.py", *overrides, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "fused_time_ratio" in run.stdout and "compact_mem_mib" in run.stdout
    assert "fused_relative_time_ratio" in run.stdout and "fused_relative_mem_mib" in run.stdout
