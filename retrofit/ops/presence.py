"""Presence coefficient rho_tau(h) = ||h||^2 / (tau + ||h||^2) (docs/method.md, "Presence")."""

import torch


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """`promote_types(dtype, float32)` for a floating `dtype`, decided in Python (no dispatched op):
    float64 stays float64, every narrower float accumulates in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def as_dtype(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`t.to(dtype)`, dispatching nothing when `t` already has that dtype (the same tensor back)."""
    return t if t.dtype == dtype else t.to(dtype)


def squared_norm(h_xE: torch.Tensor) -> torch.Tensor:
    """`||h||^2 (...)` of the carriers `h (..., E)`, accumulated in `accumulation_dtype(h.dtype)`.

    Each row's sum is the same whatever other rows the tensor holds, so the squared norms of a
    slice of rows equal that slice of the squared norms (bitwise): compute them once per carrier
    and share them between `presence_of_squared` and a tau calibrated on the same carriers.
    """
    return as_dtype(h_xE, accumulation_dtype(h_xE.dtype)).square().sum(-1)


def presence_ratio(sq_x: torch.Tensor, tau: float | torch.Tensor) -> torch.Tensor:
    """`sq / (tau + sq)` with no check of `tau`: the caller guarantees it finite and > 0 (a value
    `retrofit.adapters.TauRule` produced, or one `presence_of_squared` checked). Two operations,
    no synchronisation; exactly 0 where `sq` is 0."""
    return sq_x / (tau + sq_x)


def presence_of_squared(sq_x: torch.Tensor, tau: float | torch.Tensor) -> torch.Tensor:
    """`presence(h, tau)` from the carriers' squared norms `sq_x = squared_norm(h)`; ValueError
    unless `tau` is finite and > 0."""
    tau_t = torch.as_tensor(tau)
    if not bool(((tau_t > 0) & torch.isfinite(tau_t)).all()):
        raise ValueError(
            f"presence: tau must be finite and > 0 (got {tau!r}); tau is the squared norm at "
            "which p = 1/2, so pass a positive scale, e.g. calibrated from active-token norms."
        )
    return presence_ratio(sq_x, tau)


def presence(h_xE: torch.Tensor, tau: float | torch.Tensor) -> torch.Tensor:
    """Presence `p (...)` of the carriers `h (..., E)`.

    Contract: `p` lies in `[0, 1)` (in floating point it rounds to 1.0 once tau / ||h||^2 is
    below eps) and is exactly 0.0 where the row `h` is the zero vector, in every float dtype.
    The squared norm is accumulated in at least float32 (so half-precision rows cannot
    overflow) and `p` is returned in `promote_types(h.dtype, float32)`: a bf16 `p` would round
    values near 1 up to exactly 1 and make `log p` (OAttention's bias) coarse.
    `tau` is a positive python float or a positive tensor broadcastable to `p`'s shape (a
    per-row or per-layer calibrated scale).
    """
    return presence_of_squared(squared_norm(h_xE), tau)
