"""Benchmark: OAttention vs plain SDPA vs naive, one thread; prints ratios (`make bench`)."""

import hydra
from omegaconf import DictConfig

from retrofit.measure.bench import BenchGrid, memory_table, time_table
from retrofit.measure.memory import make_rss_track_live_memory


@hydra.main(version_base="1.3", config_path="../configs", config_name="bench")
def main(cfg: DictConfig) -> None:
    grid = BenchGrid(
        batch_sizes=tuple(cfg.batch_sizes),
        rows=tuple(cfg.rows),
        n_heads=cfg.n_heads,
        head_dim=cfg.head_dim,
        key_fraction=cfg.key_fraction,
        null_fraction=cfg.null_fraction,
        materialised_max_bytes=cfg.materialised_max_bytes,
        seed=cfg.seed,
    )
    times = time_table(grid, cfg.seconds_per_case, cfg.min_repeats, cfg.max_repeats)
    make_rss_track_live_memory()
    table = times.join(memory_table(grid))
    goal = table.R.map(lambda R: cfg.goal_ratio_small if cfg.goal_small_rows >= R else cfg.goal_ratio_large)
    table["fused_meets_goal"] = table.fused_time_ratio <= goal
    table["fused_relative_meets_goal"] = table.fused_relative_time_ratio <= cfg.goal_ratio_relative
    print("time ratios: method / plain SDPA, thread CPU time, median of interleaved paired rounds, 1 thread;")
    print("*_mem_mib: peak growth of live tensor memory in one call; output_mib: the (B, H, R, D) fp32 output")
    print(f"null_fraction={cfg.null_fraction}: sdpa, fused and materialised attend to every key; compact skips nulls")
    print(table.to_string(index=False, float_format="%.3f"))


if __name__ == "__main__":
    main()
