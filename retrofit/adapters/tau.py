"""The presence scale tau of a retrofitted block: absolute, or calibrated on the context.

Calibration rule (`mode: calibrated`): for every batch element b (one ensemble member's
table) and every O part, `tau_b = c * median{ ||h_j||^2 : j a context (train) carrier of b
entering that part, h_j != 0 }` (the lower median). Null carriers are left out, so inserting
them never moves tau; test rows are left out, so a test row never influences another test
row's prediction. With small `c` an active carrier of median norm gets `p = 1 / (1 + c)`:
calibrated near-identity. `mode: absolute` uses one fixed `tau = value` everywhere.
"""

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from retrofit.errors import RetrofitError
from retrofit.ops.presence import squared_norm

_FLOAT32 = torch.finfo(torch.float32)


@dataclass(frozen=True)
class TauRule:
    """`mode` absolute (reads `value`) or calibrated (reads `c`); the read key must be a number > 0 in
    float32's normal range (tau is computed in float32 or wider). Where a variant or an override
    gives `tau` as a bare number, it is `c` of the calibrated rule (`retrofit.variants.tau_rule`)."""

    mode: Literal["absolute", "calibrated"]
    value: float | None = None
    c: float | None = None

    def __post_init__(self) -> None:
        key = {"absolute": "value", "calibrated": "c"}.get(self.mode)
        if key is None:
            raise RetrofitError(f"tau.mode must be 'absolute' or 'calibrated', got {self.mode!r}")
        number = getattr(self, key)
        numeric = isinstance(number, int | float) and not isinstance(number, bool)
        if not (numeric and math.isfinite(number) and number > 0):
            bare = " (a bare number tau=<c> is this constant)" if key == "c" else ""
            raise RetrofitError(
                f"tau.mode={self.mode} needs tau.{key} > 0 and finite{bare}, got {number!r}; set it in the variant"
            )
        if not _FLOAT32.tiny <= number <= _FLOAT32.max:  # tau is computed in float32 or wider
            raise RetrofitError(
                f"tau.{key}={number!r} is outside float32's normal range [{_FLOAT32.tiny:.3g}, {_FLOAT32.max:.3g}], "
                "where tau is computed; set it in the variant"
            )

    def describe(self) -> str:
        """The rule in one line, for logs and reports."""
        if self.mode == "absolute":
            return f"tau = {self.value:g} (absolute)"
        return (
            f"tau = {self.c:g} * median ||h||^2 of the non-null context carriers entering each O part, "
            "per batch element (calibrated)"
        )

    def tau(self, context_BXE: torch.Tensor) -> torch.Tensor:
        """tau per batch element, shape (B,), float32 or wider, from the context carriers.

        `context_BXE`: the X context carriers (train rows, or train cells) of each batch element.
        A batch element whose context is entirely null gets tau = c (any positive scale gives
        p = 0 to null carriers, so the value is immaterial there).
        """
        return self.tau_of_squared(squared_norm(context_BXE))

    def tau_of_squared(self, sq_BX: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
        """`tau` from the context carriers' squared norms `sq_BX = squared_norm(context_BXE)` (B, X),
        in their dtype (`retrofit.ops.presence.squared_norm`: float32 or wider); what a block that
        also needs the carriers' presence calls, so the norms are computed once. (B,), or (B, 1)
        with `keepdim`. Always finite and > 0, so it feeds `retrofit.ops.presence.presence_ratio`
        without a check: an all-null context gives `c`; a `c * median` below the dtype's normal
        range gives its smallest normal number, one above it (or an infinite median, from an
        overflowed squared norm) its largest. Only exact zeros are null: a subnormal squared norm
        counts as a carrier."""
        if self.mode == "absolute":
            shape = (sq_BX.shape[0], 1) if keepdim else sq_BX.shape[:1]
            return self._taken(torch.full(shape, self.value, dtype=sq_BX.dtype, device=sq_BX.device))
        # A squared norm is >= 0 or NaN, so `threshold` (x > 0 kept, else NaN) marks exactly the
        # null carriers NaN, for nanmedian to leave out (one operation; a comparison and a fill are two).
        median_BX = torch.nanmedian(F.threshold(sq_BX, 0.0, torch.nan), dim=1, keepdim=keepdim).values
        finfo = torch.finfo(sq_BX.dtype)
        return self._taken((self.c * median_BX).clamp(finfo.tiny, finfo.max).nan_to_num(self.c))

    @staticmethod
    def _taken(tau_B: torch.Tensor) -> torch.Tensor:
        """`tau_B`, recorded for `taus_taken` if a collection is open."""
        taken = _TAKEN.get()
        if taken is not None:
            taken.append(tau_B.detach())
        return tau_B


_TAKEN: ContextVar[list[torch.Tensor] | None] = ContextVar("taus_taken", default=None)


@contextmanager
def taus_taken() -> Iterator[list[torch.Tensor]]:
    """Collect every tau `TauRule.tau` computes inside the block (one (B,) or (B, 1) tensor per call: per
    carrier whose presence a block computes, per forward pass), e.g. to report the tau a prediction
    used."""
    taken: list[torch.Tensor] = []
    token = _TAKEN.set(taken)
    try:
        yield taken
    finally:
        _TAKEN.reset(token)
