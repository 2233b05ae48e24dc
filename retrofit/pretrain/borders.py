"""The bar distribution's bucket borders a host is pretrained with, from the prior's targets."""

import torch

from retrofit.prior import sample_batch, sample_shape, zscore_targets


def quantile_borders(num_buckets: int, seed: int, n_values: int, tail_share: float = 0.0) -> torch.Tensor:
    """Bucket borders at quantiles of z-scored prior test targets mixed with a `tail_share` of
    uniform draws on [-8, 8] (so the tails keep buckets of about 16 / (tail_share * num_buckets)
    sd); outer borders at +-8 (the clip)."""
    if not 0.0 <= tail_share < 1.0:
        raise ValueError(f"border tail_share must be in [0, 1), got {tail_share}")
    g = torch.Generator().manual_seed(seed)
    values = []
    while sum(v.numel() for v in values) < n_values:
        b = sample_batch(sample_shape(g, (30, 200), (1, 10)), 16, g)
        values.append(zscore_targets(b.y_RB, b.shape.n_train)[b.shape.n_train :].flatten())
    n_uniform = round(n_values * tail_share)
    uniform = torch.empty(n_uniform, dtype=torch.float64).uniform_(-8.0, 8.0, generator=g)
    v = torch.cat([torch.cat(values)[: n_values - n_uniform].double(), uniform])
    borders = torch.quantile(v, torch.linspace(0, 1, num_buckets + 1, dtype=torch.float64)).float()
    borders[0], borders[-1] = -8.0, 8.0
    return borders.contiguous()
