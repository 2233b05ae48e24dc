"""Zero-absorbing local maps (docs/method.md, "O-Closure"): a null token (h = 0, p = 0) stays exactly 0.

Each map is a functional core, usable on someone else's modules, plus a thin nn.Module. `p_x` is
the presence of each row of `h_xE` (e.g. `presence`).
"""

import torch
import torch.nn.functional as F
from torch import nn

from retrofit.ops.presence import as_dtype, presence


def _gate(p_x: torch.Tensor, u_xE: torch.Tensor) -> torch.Tensor:
    """p[..., None] * u in u's dtype: exactly 0 where p == 0 (u finite), exactly u where p == 1."""
    return as_dtype(p_x, u_xE.dtype).unsqueeze(-1) * u_xE


def _plus_gated(h_xE: torch.Tensor, gated_xE: torch.Tensor) -> torch.Tensor:
    """`h + gated` for a `gated` fresh from `_gate` (no one else holds it): summed into `gated`'s
    own buffer where that is the sum's shape and dtype (the same bits: addition commutes; the
    product's backward does not read its output), a new tensor otherwise. Decided on shapes and
    dtypes in Python: no operation is dispatched for the decision."""
    if gated_xE.shape == h_xE.shape and gated_xE.dtype == h_xE.dtype:
        return gated_xE.add_(h_xE)
    return h_xE + gated_xE


def o_ffn(h_xE: torch.Tensor, p_x: torch.Tensor, ffn: nn.Module, norm: nn.Module | None = None) -> torch.Tensor:
    """OFFN residual update `h + p * ffn(norm(h))` (pre-norm; `norm=None` applies ffn to h).

    Zero absorption: a row with h = 0 and p = 0 stays exactly 0 whatever `ffn` and `norm` do
    at the origin (their biases included). Rows are independent, so other tokens cannot move.
    """
    return _plus_gated(h_xE, _gate(p_x, ffn(h_xE if norm is None else norm(h_xE))))


def o_linear(x_xF: torch.Tensor, p_x: torch.Tensor, linear: nn.Linear) -> torch.Tensor:
    """`W x + p * b`: an affine map whose bias is gated by presence, so 0 -> 0 exactly.

    Near-identity on active rows: differs from `linear(x)` by `(1 - p) * b`.
    Use for projections that write onto the residual stream (e.g. attention's output).
    """
    out_xE = F.linear(x_xF, linear.weight)
    return out_xE if linear.bias is None else _plus_gated(out_xE, _gate(p_x, linear.bias.expand_as(out_xE)))


def o_norm(x_xE: torch.Tensor, p_x: torch.Tensor, norm: nn.LayerNorm | nn.RMSNorm) -> torch.Tensor:
    """ONorm: `norm` with its bias gated by presence, `weight * normalise(x) + p * bias`.

    `normalise(0) = 0` exactly, so 0 -> 0. Near-identity on active rows: differs from `norm(x)`
    by `(1 - p) * bias`, i.e. `tau / (tau + ||x||^2) * bias`. RMSNorm has no bias and already maps
    0 -> 0; it is returned unchanged. Only a 1-D `normalized_shape` (the feature axis) is supported.
    """
    if not isinstance(norm, (nn.LayerNorm, nn.RMSNorm)) or len(norm.normalized_shape) != 1:
        raise TypeError(
            f"o_norm supports nn.LayerNorm / nn.RMSNorm over the last axis only, got {norm!r}; "
            "for another norm gate its output or bias by presence yourself (see o_linear)."
        )
    if isinstance(norm, nn.RMSNorm):
        return norm(x_xE)
    y_xE = F.layer_norm(x_xE, norm.normalized_shape, norm.weight, None, norm.eps)
    return y_xE if norm.bias is None else _plus_gated(y_xE, _gate(p_x, norm.bias.expand_as(y_xE)))


def o_inject(u_xE: torch.Tensor, p_x: torch.Tensor) -> torch.Tensor:
    """OInject: an injected signal `u` (embedding, label encoding) gated by presence, `p * u`.

    A null token receives exactly 0, so `h + o_inject(u, p)` keeps it null. Pass the structural
    presence (1 for real tokens, 0 for null ones: exact identity on real tokens) at the input, or
    the receiving carrier's `presence(h, tau)` when injecting into an existing stream.
    """
    return _gate(p_x, u_xE)


class OFFN(nn.Module):
    """`h + presence(h, tau) * ffn(norm(h))`; see `o_ffn`. Keeps `ffn` and `norm` as submodules."""

    def __init__(self, ffn: nn.Module, tau: float, norm: nn.Module | None = None):
        super().__init__()
        self.ffn, self.norm, self.tau = ffn, norm, tau

    def forward(self, h_xE: torch.Tensor) -> torch.Tensor:
        return o_ffn(h_xE, presence(h_xE, self.tau), self.ffn, self.norm)


class ONorm(nn.Module):
    """Drop-in for `base_layer` (LayerNorm/RMSNorm) with 0 -> 0; see `o_norm`.

    The bias is gated by the presence of the norm's own input, `presence(x, tau)`.
    `base_layer` is kept unchanged, so unwrapping restores the original exactly.
    """

    def __init__(self, base_layer: nn.LayerNorm | nn.RMSNorm, tau: float):
        super().__init__()
        self.base_layer, self.tau = base_layer, tau

    def forward(self, x_xE: torch.Tensor) -> torch.Tensor:
        return o_norm(x_xE, presence(x_xE, self.tau), self.base_layer)


class OInject(nn.Module):
    """`p * encoder(x)`: an input encoder whose output is gated by the given presence."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, x_xF: torch.Tensor, p_x: torch.Tensor) -> torch.Tensor:
        return o_inject(self.encoder(x_xF), p_x)
