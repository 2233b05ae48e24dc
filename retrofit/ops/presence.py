"""Presence coefficient rho_tau(h) = ||h||^2 / (tau + ||h||^2) (docs/method.md, "Presence")."""

import torch


def squared_norm(h_xE: torch.Tensor) -> torch.Tensor:
    """`||h||^2 (...)` of the carriers `h (..., E)`, accumulated in `promote_types(h.dtype, float32)`.

    Each row's sum is the same whatever other rows the tensor holds, so the squared norms of a
    slice of rows equal that slice of the squared norms (bitwise): compute them once per carrier
    and share them between `presence_of_squared` and a tau calibrated on the same carriers.
    """
    return h_xE.to(torch.promote_types(h_xE.dtype, torch.float32)).square().sum(-1)


def presence_of_squared(sq_x: torch.Tensor, tau: float | torch.Tensor) -> torch.Tensor:
    """`presence(h, tau)` from the carriers' squared norms `sq_x = squared_norm(h)`."""
    tau_t = torch.as_tensor(tau)
    if not bool(((tau_t > 0) & torch.isfinite(tau_t)).all()):
        raise ValueError(
            f"presence: tau must be finite and > 0 (got {tau!r}); tau is the squared norm at "
            "which p = 1/2, so pass a positive scale, e.g. calibrated from active-token norms."
        )
    return sq_x / (tau + sq_x)


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
