"""OStandardize (docs/method.md, "O-Closure"): presence-weighted moments, so null tokens carry zero mass."""

import torch
from torch import nn


def o_standardize(x: torch.Tensor, p: torch.Tensor, dim: int, eps: float = 1e-5) -> torch.Tensor:
    """Standardise `x` along the token axis `dim` with presence weights; same shape and dtype.

    `p` is broadcastable to `x` (e.g. `x_BRC` with `p_BR[..., None]` and `dim=1`).
    mean = sum p x / sum p, var = sum p (x - mean)^2 / sum p (population form), computed in at
    least float32; out = (x - mean) / sqrt(var + eps) on rows with p > 0 and exactly 0 on rows
    with p <= 0. Null rows' contents (even NaN) are ignored, so inserting them changes no active
    output beyond summation-order rounding; with no active row at all, the output is all 0.
    """
    acc_dtype = torch.promote_types(x.dtype, torch.float32)
    w = torch.where(p > 0, p, 0).to(acc_dtype)
    active = w > 0
    x_acc = torch.where(active, x.to(acc_dtype), 0)
    mass = w.sum(dim, keepdim=True).clamp_min(torch.finfo(acc_dtype).tiny)
    mean = (w * x_acc).sum(dim, keepdim=True) / mass
    var = (w * (x_acc - mean).square()).sum(dim, keepdim=True) / mass
    return torch.where(active, (x_acc - mean) * torch.rsqrt(var + eps), 0).to(x.dtype)


class OStandardize(nn.Module):
    """`o_standardize(x, p, dim, eps)` as a module."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return o_standardize(x, p, self.dim, self.eps)
