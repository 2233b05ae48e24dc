"""The explanation benchmark's settings: the schema of `configs/explain_bench.yaml` (each setting's
role is written there), checked once (`ExplainBenchConfig.from_config`). Importing it imports no
model (torch, tabpfn, shapiq): those come with the check of the settings."""

from dataclasses import dataclass, field
from typing import Any

from retrofit.errors import RetrofitError
from retrofit.typed import typed_object


@dataclass
class ExplainBenchConfig:
    """The settings of `benchmarks.removal_vs_refit` (`benchmark_datasets`: the shared list of
    `configs/benchmark/` that `datasets` is read from)."""

    hosts: list[str] = field(default_factory=lambda: ["tiny_v3", "tiny_v3_5"])
    datasets: list[str] = field(default_factory=list)
    benchmark_datasets: str | None = None
    seed: int = 0
    n_estimators: int = 1
    max_train_rows: int = 100
    n_explain: int = 1
    n_explain_batched: int = 32
    exact_max_features: int = 12
    budget: int = 128
    indices: list[str] = field(default_factory=lambda: ["SV", "k-SII"])
    n_loo_queries: int = 32
    n_stage_coalitions: int = 64
    random_state: int = 0
    repeats: int = 3
    inference_preset: str | None = "lean"
    feature_shift_method: str | None = None
    threads: int = 1
    device: str = "cpu"
    output: str = "results/removal_bench.csv"
    plot: str = "results/removal_bench.png"
    example_plot: str = "results/removal_bench_example.png"
    stages_output: str = "results/removal_stages.csv"
    example_dataset: str = "diabetes"

    @classmethod
    def from_config(cls, node: Any) -> "ExplainBenchConfig":
        """The typed settings; RetrofitError naming an unknown key, a wrong type or a bad value."""
        from benchmarks.removal_vs_refit.refits import INDICES
        from retrofit.hosts import inference_config

        cfg = typed_object(cls, node, "explain_bench config")
        counts = (cfg.n_explain, cfg.repeats, cfg.n_explain_batched, cfg.n_loo_queries, cfg.n_stage_coalitions)
        if not cfg.datasets or not cfg.hosts or min(counts) < 1 or cfg.budget < 2:
            raise RetrofitError(
                "explain-bench needs hosts, datasets, n_explain, n_explain_batched, n_loo_queries, "
                "n_stage_coalitions and repeats >= 1 and budget >= 2"
            )
        if cfg.inference_preset is not None:
            try:
                inference_config(cfg.inference_preset)
            except ValueError as err:
                raise RetrofitError(f"explain-bench inference_preset: {err}") from None
        if sorted(set(cfg.indices) - set(INDICES)) or "SV" not in cfg.indices:
            raise RetrofitError(
                f"explain-bench: indices must include 'SV' and be among {sorted(INDICES)}, got {cfg.indices}"
            )
        return cfg
