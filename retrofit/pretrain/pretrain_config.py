"""The typed settings of one pretraining run (`configs/pretrain/`)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from retrofit.typed import typed_object


@dataclass
class PretrainConfig:
    """Everything a pretraining run depends on (the Hydra `pretrain/` group fills it)."""

    host_name: str
    arch_name: str
    arch: dict[str, Any]
    run_dir: str
    curriculum: list[dict]
    export_path: str | None = None
    inference_preset: str = "v2_default"
    lr: float = 3e-3
    warmup_steps: int = 100
    grad_clip: float = 1.0
    seed: int = 0
    max_steps: int = 1_000_000
    max_minutes: float = 60.0
    eval_every_s: float = 300.0
    checkpoint_every_s: float = 120.0
    threads: int = 1
    # Where the model trains: cpu | cuda | auto (cuda where available). The prior's batches are drawn
    # on the CPU either way, so a run's stream of tables does not depend on the device.
    device: str = "cpu"
    border_samples: int = 200_000
    # Share of the border sample drawn uniformly on [-8, 8]: without it the quantile borders leave
    # one bucket for every z above the sample's top quantile, and the host jumps far out when it extrapolates.
    border_tail_share: float = 0.2
    reborder: bool = False
    val: dict[str, dict] = field(default_factory=dict)
    # What changed during this host's training (prior, curriculum), in words, for its model card.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> "PretrainConfig":
        """The typed config of a `pretrain` node (dict or OmegaConf); RetrofitError naming an
        unknown key, a missing one or a value of the wrong type."""
        return typed_object(cls, node, "pretrain config")
