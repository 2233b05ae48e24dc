"""Batched forwards of one fitted o_closed regressor over one context, many presence patterns.

A "coalition" here is one presence pattern: which raw features (columns) and which training
rows are present. Every coalition is one batch element of the same member input — the fitted
context and the query rows, as tabpfn's own pipeline prepares them once — with absence declared
through `row_presence` / `column_presence` of `OClosedTabPFNV3.forward`. Nothing is refitted,
nothing padded: the table keeps its shape. Each coalition's logits are then decoded exactly as
`predict` decodes them (`retrofit.batching.decode_members`).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from tabpfn.utils import get_autocast_context

from retrofit.batching import MemberInput, decode_members, member_inputs
from retrofit.errors import RetrofitError

MAX_CELLS = 4_000_000
"""Default memory bound: one forward holds at most this many cells (coalitions x rows x columns
of one member; a single coalition over it runs alone). The column stage's activations are about
cells x embedding width x 4 bytes times a small constant (tiny_v3, width 64: 1 GB per
activation tensor at the bound)."""

PresenceFn = Callable[[int, MemberInput, slice], tuple[torch.Tensor | None, torch.Tensor | None]]
"""(member index, member input, coalition slice) -> (row presence (k, N) of the train rows or
None for all present, column presence (k, C) or None), k the slice's length."""


def check_coalitions(coalitions: Any, n_players: int, players: str) -> np.ndarray:
    """`coalitions` as a (K, n_players) bool array; RetrofitError for another dtype or shape."""
    array = np.asarray(coalitions)
    if array.dtype != np.bool_:
        raise RetrofitError(
            f"coalitions must be a boolean array (True = present), got dtype {array.dtype}; pass e.g. mask.astype(bool)"
        )
    if array.ndim != 2 or array.shape[1] != n_players or array.shape[0] == 0:
        raise RetrofitError(
            f"coalitions must have shape (K >= 1, {n_players}) — one row per coalition, one column per {players} — "
            f"got {array.shape}"
        )
    return array


def evaluate(
    regressor: TabPFNRegressor,
    X: Any,
    n_coalitions: int,
    presence: PresenceFn,
    max_cells: int = MAX_CELLS,
    *,
    declare: bool = True,
) -> np.ndarray:
    """Mean predictions (n_coalitions, n_rows) of `regressor` on query rows `X`, coalition k with
    the presences `presence` gives it, in forwards of at most `max_cells` cells (see `MAX_CELLS`).

    `declare=True` passes the presences to the (o_closed) model; `declare=False` instead sets the
    absent cells (and absent rows' targets) to 0 and passes nothing — what a stock model can be
    given, used to measure what masking by value leaks."""
    if max_cells < 1:
        raise RetrofitError(f"max_cells must be a positive number of cells per forward, got {max_cells}")
    members = member_inputs(0, regressor, X)
    outputs = []
    for index, member in enumerate(members):
        N, T, C = member.shape
        per_forward = max(1, max_cells // ((N + T) * C))
        chunks = []
        for start in range(0, n_coalitions, per_forward):
            window = slice(start, min(start + per_forward, n_coalitions))
            p_train, p_col = presence(index, member, window)
            chunks.append(_forward(regressor, member, window.stop - window.start, p_train, p_col, declare))
        outputs.append(torch.cat(chunks, dim=1).transpose(0, 1).reshape(n_coalitions * T, -1))
    predictions = decode_members(regressor, outputs)
    return np.asarray(predictions, dtype=np.float64).reshape(n_coalitions, -1)


def _forward(
    regressor: TabPFNRegressor,
    member: MemberInput,
    k: int,
    p_train_kN: torch.Tensor | None,
    p_col_kC: torch.Tensor | None,
    declare: bool,
) -> torch.Tensor:
    """Logits (T, k, buckets): `member`'s input repeated over k batch elements with the given
    presences, declared or zeroed (see `evaluate`)."""
    N, T, C = member.shape
    x_RkC = member.x_RC[:, None].expand(N + T, k, C).contiguous()
    y_Nk = member.y_N[:, None].expand(N, k).contiguous()
    p_kR = (
        x_RkC.new_ones(k, N + T) if p_train_kN is None else torch.cat([p_train_kN.to(x_RkC), x_RkC.new_ones(k, T)], 1)
    )
    p_kC = x_RkC.new_ones(k, C) if p_col_kC is None else p_col_kC.to(x_RkC)
    if declare:
        presences = {"row_presence": p_kR, "column_presence": p_kC}
    else:
        presences = {}
        x_RkC = torch.where((p_kR.T[:, :, None] * p_kC[None]) > 0, x_RkC, 0)
        y_Nk = torch.where(p_kR[:, :N].T > 0, y_Nk, 0)
    with get_autocast_context(regressor.devices_[0], enabled=regressor.use_autocast_), torch.inference_mode():
        return regressor.models_[0](x_RkC, y_Nk, **presences).float()
