"""Randomly initialised hosts of every supported architecture: tiny ones for tests and audits,
tabpfn's default sizes for measuring cost at real size.

tabpfn zero-initialises the output projection of every attention and FFN branch, so a freshly
built host is an identity stack: no attention output reaches the carriers and nothing an adapter
does can show. Both writers therefore redraw those all-zero matrices (Xavier-uniform, like
their sibling projections) before writing the checkpoint.
"""

from pathlib import Path
from typing import Any

import torch

from retrofit.hosts.checkpoint import build_host, inference_config, save_as_published, save_host, set_borders
from retrofit.hosts.column_embeddings import pin_drawn

RANDOM_HOST_COLUMNS = 16
"""A random v2-family host stores the draws of 1..16 columns (feature groups); above, the CPU draw."""

TINY_V3: dict[str, Any] = dict(
    embed_dim=32,
    nlayers=2,
    icl_num_heads=4,
    icl_num_kv_heads=2,
    icl_num_kv_heads_test=1,
    dist_embed_num_blocks=1,
    dist_embed_num_heads=2,
    dist_embed_num_inducing_points=8,
    feat_agg_num_blocks=1,
    feat_agg_num_heads=2,
    decoder_num_heads=2,
    decoder_head_dim=8,
    max_num_classes=0,
    num_buckets=32,
)
"""v3 with grouped KV heads (4 query heads, 2 KV heads for train rows, 1 for test rows), so the
GQA/MQA paths are exercised."""

TINY_ARCHS: dict[str, dict[str, Any]] = {
    "tabpfn_v3": TINY_V3,
    # v3.5 with the same grouped KV heads, 4 CLS tokens (in-context width 4 x 16) and narrow
    # Fourier / softmax-scaling MLPs.
    "tabpfn_v3_5": {
        **TINY_V3,
        "embed_dim": 16,
        "feat_agg_num_cls_tokens": 4,
        "softmax_scaling_mlp_hidden_dim": 16,
        "fourier_encoding_num_frequencies": 8,
    },
    "tabpfn_v2": dict(emsize=32, nlayers=2, nhead=2, max_num_classes=0, num_buckets=32),
    "tabpfn_v2_5": dict(emsize=32, nlayers=2, nhead=2, num_thinking_rows=4, max_num_classes=0, num_buckets=32),
    "tabpfn_v2_6": dict(emsize=32, nlayers=2, nhead=2, num_thinking_rows=4, max_num_classes=0, num_buckets=32),
}
"""Architecture -> config of its tiny test host (two in-context blocks each)."""

VERSION_TAG = {
    "tabpfn_v2": "v2",
    "tabpfn_v2_5": "v2.5",
    "tabpfn_v2_6": "v2.6",
    "tabpfn_v3": "v3",
    "tabpfn_v3_5": "v3.5",
}
"""tabpfn reads a checkpoint's version off its file name."""


DEFAULT_SIZE_HEADS: dict[str, dict[str, int]] = {
    arch: dict(max_num_classes=10 if arch == "tabpfn_v3_5" else 0, num_buckets=5000) for arch in TINY_ARCHS
}
"""Architecture -> the head sizes of its default-size host; every other key is tabpfn's default.
5,000 buckets as in tabpfn's regressors; v3.5 keeps its classification head (a multitask file)."""


def _random_model(arch_name: str, arch_kwargs: dict[str, Any], seed: int):
    """(model, config, criterion): `arch_name` built with `arch_kwargs`, zero branches redrawn,
    borders on [-4, 4], column embeddings (v2 family) pinned to their CPU draws."""
    model, config = build_host(arch_name, arch_kwargs, seed=seed)
    pin_drawn(model, RANDOM_HOST_COLUMNS)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.dim() == 2 and not weight.any():
                bound = (6.0 / sum(weight.shape)) ** 0.5
                weight.uniform_(-bound, bound, generator=generator)
    return model, config, set_borders(model, torch.linspace(-4.0, 4.0, config.num_buckets + 1))


def random_host(arch_name: str, folder: Path, seed: int = 0, arch_kwargs: dict[str, Any] | None = None) -> Path:
    """Write a random `arch_name` host (zero-initialised branches redrawn) into `folder`."""
    model, config, criterion = _random_model(arch_name, arch_kwargs or TINY_ARCHS[arch_name], seed)
    path = Path(folder) / f"tabpfn-random-{VERSION_TAG[arch_name]}-seed{seed}-regressor.safetensors"
    return save_host(path, model, config, arch_name, criterion, inference_config("lean"))


def default_size_host(arch_name: str, folder: Path, seed: int = 0, overrides: dict[str, Any] | None = None) -> Path:
    """Write a random `arch_name` host at tabpfn's default architecture config (`DEFAULT_SIZE_HEADS`;
    `overrides` replace config keys) into `folder`, stored as tabpfn publishes that version
    (`retrofit.hosts.checkpoint.PUBLISHED_FORMATS`)."""
    model, config, criterion = _random_model(arch_name, {**DEFAULT_SIZE_HEADS[arch_name], **(overrides or {})}, seed)
    return save_as_published(folder, model, config, arch_name, criterion)
