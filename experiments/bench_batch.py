"""predict_many vs sequential predict on the benchmark's 18 cases -> results/bench_batch.csv."""

import logging
import statistics
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.fitting import fit_cases
from retrofit.hosts import get_path
from retrofit.measure.batch_bench import bench_batch, sequential_seconds_by_table
from retrofit.patching import retrofit
from retrofit.runner.config import dataset_specs
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="bench_batch")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    torch.set_num_threads(cfg.threads)
    hydra_cfg = HydraConfig.get()
    output = Path(to_absolute_path(cfg.output))
    with exit_on_user_error():
        check_record_outputs([output], hydra_cfg.overrides.task)
    datasets = dataset_specs(hydra_cfg, cfg.datasets)
    base_dir = Path(hydra_cfg.runtime.cwd)
    cases = fit_cases(get_path(cfg.host), datasets, cfg.seeds, base_dir=base_dir, n_estimators=cfg.n_estimators)
    pairs = [(retrofit(case.regressor, cfg.variant), case.X_test) for case in cases]
    table = bench_batch(cfg.host, pairs, cfg.rounds)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3f"))
    speedup = statistics.median(table.speedup)
    print(
        f"predict_many speed-up over sequential predict: median {speedup:.2f}x "
        f"(min {table.speedup.min():.2f}, max {table.speedup.max():.2f}) over {len(table)} interleaved rounds"
    )
    if speedup < 1.5:
        share = statistics.median(table.preprocess_seconds / table.predict_many_seconds)
        print(
            f"where predict_many's time goes: test-row preprocessing {share:.0%} (tabpfn's per-member pipeline, "
            f"the same on both sides), forward passes and post-processing {1 - share:.0%}"
        )
        by_table = sequential_seconds_by_table(pairs)
        by_dataset = {case.name: 0.0 for case in cases}
        for case, seconds in zip(cases, by_table, strict=True):
            by_dataset[case.name] += seconds
        total = sum(by_table)
        print(
            "sequential predict time by dataset (one call per table): "
            + ", ".join(f"{name} {seconds:.1f}s ({seconds / total:.0%})" for name, seconds in by_dataset.items())
        )
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
