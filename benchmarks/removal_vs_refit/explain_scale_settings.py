"""The settings of removal explanations at default size (`benchmarks.removal_vs_refit.removal_at_scale`): the schema of
`configs/explain_scale.yaml` (each setting's role is written there). Importing it imports no
model (torch, tabpfn): those come with the check of the settings."""

from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from retrofit.errors import RetrofitError
from retrofit.typed import typed_object

MAX_FEATURES = 10
"""The most features explained: every one of the 2^d coalitions is refitted for the reference."""


@dataclass
class ExplainScaleConfig:
    """The keys of `configs/explain_scale.yaml`; `archs`: tabpfn architectures built at their default
    size, but for the config keys `arch_overrides` replaces per architecture."""

    archs: list[str] = MISSING
    n_train: int = MISSING
    n_features: int = MISSING
    n_explain: int = MISSING
    n_loo_queries: int = MISSING
    n_estimators: int = MISSING
    inference_preset: str = MISSING
    rounds: int = MISSING
    threads: int = MISSING
    device: str = MISSING
    arch_overrides: dict[str, dict[str, Any]] = MISSING
    seed: int = MISSING
    output: str = MISSING

    @classmethod
    def from_config(cls, node: Any) -> "ExplainScaleConfig":
        """The typed settings; RetrofitError naming an unknown key, a wrong type or a bad value."""
        from retrofit.hosts import inference_config
        from retrofit.hosts.random_host import DEFAULT_SIZE_HEADS

        cfg = typed_object(cls, node, "explain_scale config")
        unknown = [arch for arch in [*cfg.archs, *cfg.arch_overrides] if arch not in DEFAULT_SIZE_HEADS]
        if unknown or not cfg.archs:
            raise RetrofitError(
                f"explain_scale archs: {unknown or 'none'} given; use some of {list(DEFAULT_SIZE_HEADS)}"
            )
        counts = (cfg.n_train, cfg.n_explain, cfg.n_loo_queries, cfg.n_estimators, cfg.rounds, cfg.threads)
        if min(counts) < 1:
            raise RetrofitError(
                "explain_scale: n_train, n_explain, n_loo_queries, n_estimators, rounds and threads must be >= 1"
            )
        if not 1 <= cfg.n_features <= MAX_FEATURES:
            raise RetrofitError(
                f"explain_scale: n_features must be 1..{MAX_FEATURES} (each of the 2^d coalitions is refitted), "
                f"got {cfg.n_features}"
            )
        try:
            inference_config(cfg.inference_preset)
        except ValueError as err:
            raise RetrofitError(f"explain_scale inference_preset: {err}") from None
        return cfg
