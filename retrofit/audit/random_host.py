"""Tiny randomly initialised hosts whose residual branches are not identically zero.

tabpfn zero-initialises the output projection of every attention and FFN branch, so a freshly
built host is an identity stack: no attention output reaches the carriers, and nothing an
adapter does can show. For contract tests and for auditing before a pretrained host exists,
those all-zero weight matrices are redrawn (Xavier-uniform, like their sibling projections).
"""

from pathlib import Path
from typing import Any

import torch

from retrofit.hosts import build_host, inference_config, save_host, set_borders

VERSION_TAG = {"tabpfn_v2": "v2", "tabpfn_v2_5": "v2.5", "tabpfn_v2_6": "v2.6", "tabpfn_v3": "v3"}
"""tabpfn reads a checkpoint's version off its file name."""


def active_random_host(arch_name: str, arch_kwargs: dict[str, Any], seed: int, folder: Path) -> Path:
    """Write a random `arch_name` host with its zero-initialised matrices redrawn; returns its path."""
    model, config = build_host(arch_name, arch_kwargs, seed=seed)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.dim() == 2 and not weight.any():
                bound = (6.0 / sum(weight.shape)) ** 0.5
                weight.uniform_(-bound, bound, generator=generator)
    criterion = set_borders(model, torch.linspace(-4.0, 4.0, config.num_buckets + 1))
    path = Path(folder) / f"tabpfn-random-{VERSION_TAG[arch_name]}-seed{seed}-regressor.safetensors"
    return save_host(path, model, config, arch_name, criterion, inference_config("lean"))
