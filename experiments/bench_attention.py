"""Benchmark: OAttention vs plain SDPA vs naive, one thread; prints ratios (`make bench`)."""

import hydra
from omegaconf import DictConfig

from retrofit.ops_experiments.bench import bench_table


@hydra.main(version_base="1.3", config_path="../configs", config_name="bench")
def main(cfg: DictConfig) -> None:
    table = bench_table(
        batch_sizes=list(cfg.batch_sizes), rows=list(cfg.rows), n_heads=cfg.n_heads, head_dim=cfg.head_dim,
        key_fraction=cfg.key_fraction, null_fraction=cfg.null_fraction, seconds_per_case=cfg.seconds_per_case,
        min_repeats=cfg.min_repeats, max_repeats=cfg.max_repeats,
        materialised_max_bytes=cfg.materialised_max_bytes, seed=cfg.seed,
    )
    goal = table.R.map(lambda R: cfg.goal_ratio_small if R <= cfg.goal_small_rows else cfg.goal_ratio_large)
    table["fused_meets_goal"] = table.fused_time_ratio <= goal
    print("time ratios: method / plain SDPA, thread CPU time, median of interleaved paired rounds, 1 thread;")
    print("*_mem_mib: peak growth of live tensor memory in one call; output_mib: the (B, H, R, D) fp32 output")
    print(f"null_fraction={cfg.null_fraction}: sdpa, fused and materialised attend to every key; compact skips nulls")
    print(table.to_string(index=False, float_format="%.3f"))


if __name__ == "__main__":
    main()
