"""The attention benchmark's entry point, and the insertion mask the operator experiments share
(their entry points run in `tests/test_ablation.py` and `tests/test_exactness.py`)."""

from pathlib import Path

import pytest
from processes import run_entry_point

from retrofit.ops.insertion import keep_mask

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_bench_entry_point_prints_ratios(tmp_path):
    """In a subprocess: the benchmark changes process-wide allocator settings for its memory pass."""
    overrides = ["batch_sizes=[1]", "rows=[32]", "seconds_per_case=0", "min_repeats=1", "max_repeats=1"]
    run = run_entry_point("bench_attention.py", *overrides, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "fused_time_ratio" in run.stdout and "compact_mem_mib" in run.stdout
    assert "fused_relative_time_ratio" in run.stdout and "fused_relative_mem_mib" in run.stdout


def test_keep_mask_rejects_out_of_range_positions():
    assert keep_mask(3, [0, 3, 3]).tolist() == [False, True, True, True, False, False]
    with pytest.raises(ValueError, match="insertion positions"):
        keep_mask(3, [4])
