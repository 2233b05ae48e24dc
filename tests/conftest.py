"""Shared test setup: tests never touch the network."""

import os

# Set before tabpfn/huggingface_hub are imported by any test module: a hub lookup must
# fail at once instead of hanging on the closed network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TABPFN_DISABLE_TELEMETRY", "1")


from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

TINY_RANDOM_ARCHS: dict[str, dict] = {
    "tabpfn_v2": dict(emsize=32, nlayers=2, nhead=2, features_per_group=2, max_num_classes=0, num_buckets=32),
    "tabpfn_v2_5": dict(emsize=32, nlayers=2, nhead=2, features_per_group=2, num_thinking_rows=4, max_num_classes=0, num_buckets=32),
    "tabpfn_v2_6": dict(emsize=32, nlayers=2, nhead=2, features_per_group=2, num_thinking_rows=4, max_num_classes=0, num_buckets=32),
    "tabpfn_v3": dict(
        embed_dim=32, nlayers=2, icl_num_heads=2, dist_embed_num_blocks=1, dist_embed_num_heads=2,
        dist_embed_num_inducing_points=8, feat_agg_num_blocks=1, feat_agg_num_heads=2, decoder_num_heads=2,
        decoder_head_dim=8, max_num_classes=0, num_buckets=32,
    ),
}
"""Tiny randomly initialised hosts of each supported architecture, for fast contract tests."""

# tabpfn reads the version off the file name; these tags match its identifiers.
_VERSION_TAG = {"tabpfn_v2": "v2", "tabpfn_v2_5": "v2.5", "tabpfn_v2_6": "v2.6", "tabpfn_v3": "v3"}


@pytest.fixture(scope="session")
def make_random_host(tmp_path_factory):
    """Factory `make_random_host(arch_name, seed=0) -> Path` of a tiny random host checkpoint
    (cached per session; loadable by `TabPFNRegressor(model_path=...)`)."""
    from retrofit.hosts import build_host, inference_config, save_host, set_borders

    cache: dict[tuple[str, int], Path] = {}

    def make(arch_name: str, seed: int = 0) -> Path:
        if (arch_name, seed) not in cache:
            model, config = build_host(arch_name, TINY_RANDOM_ARCHS[arch_name], seed=seed)
            criterion = set_borders(model, torch.linspace(-4.0, 4.0, config.num_buckets + 1))
            folder = tmp_path_factory.mktemp(f"host_{arch_name}_{seed}")
            path = folder / f"tabpfn-random-{_VERSION_TAG[arch_name]}-regressor.safetensors"
            cache[(arch_name, seed)] = save_host(path, model, config, arch_name, criterion, inference_config("lean"))
        return cache[(arch_name, seed)]

    return make
