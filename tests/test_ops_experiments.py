"""The operator experiments compose from their configs and produce self-describing tables."""

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from retrofit.measure.ablation import ablation_markdown, ablation_table
from retrofit.measure.exactness import Shape, exactness_table
from retrofit.measure.insertion import keep_mask

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture
def compose_config():
    def _compose(name, overrides=()):
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            return compose(config_name=name, overrides=list(overrides))

    yield _compose
    GlobalHydra.instance().clear()


def test_exactness_config_runs_and_meets_contracts(compose_config):
    cfg = compose_config("exactness", ["shapes=[{B: 1, H: 2, Q: 16, K: 12, D: 8}]", "score_stds=[1.0]"])
    table = exactness_table(
        [Shape(**s) for s in cfg.shapes], cfg.score_stds, cfg.dtypes, cfg.null_fraction, cfg.insert_fraction, cfg.seed
    )
    assert len(table) == 3 * 2 * 3 and (table.null_receiver_max_abs == 0).all()  # implementations x eps_mode x dtypes
    assert set(table.eps_mode) == {"absolute", "relative"}
    assert (table[table.implementation == "compact"].null_insertion_linf_abs == 0).all()


def test_ablation_config_runs_with_paper_columns(compose_config):
    cfg = compose_config("ablation", ["d_model=16", "d_ffn=32", "n_old=8", "n_nulls=[2]"])
    table = ablation_table(
        cfg.d_model,
        cfg.n_heads,
        cfg.d_ffn,
        cfg.n_blocks,
        cfg.bias_std,
        cfg.batch,
        cfg.n_old,
        list(cfg.n_nulls),
        cfg.tau,
        cfg.eps_den,
        cfg.seed,
    )
    assert list(table.columns) == ["host", "block", "n_null", "linf_old_tokens"]
    assert (table[table.host == "otransformer"].linf_old_tokens == 0).all()
    assert "| otransformer |" in ablation_markdown(table)


def test_bench_entry_point_prints_ratios(tmp_path):
    """In a subprocess: the benchmark changes process-wide allocator settings for its memory pass."""
    script = CONFIGS.parent / "experiments" / "bench_attention.py"
    overrides = ["batch_sizes=[1]", "rows=[32]", "seconds_per_case=0", "min_repeats=1", "max_repeats=1"]
    run = subprocess.run(
        [sys.executable, str(script), *overrides], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "fused_time_ratio" in run.stdout and "compact_mem_mib" in run.stdout
    assert "fused_relative_time_ratio" in run.stdout and "fused_relative_mem_mib" in run.stdout


def test_keep_mask_rejects_out_of_range_positions():
    assert keep_mask(3, [0, 3, 3]).tolist() == [False, True, True, True, False, False]
    with pytest.raises(ValueError, match="insertion positions"):
        keep_mask(3, [4])
