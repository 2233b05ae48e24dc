"""Batched forwards of one fitted o_closed regressor over one context, many presence patterns.

A "coalition" here is one presence pattern: which raw features (columns) and which training
rows are present. Every coalition is one batch element of the same member input — the fitted
context and the query rows, as tabpfn's own pipeline prepares them once — with absence declared
through `row_presence` / `column_presence` of `OClosedTabPFNV3.forward`. Nothing is refitted,
nothing padded: the table keeps its shape. Each coalition's logits are then decoded exactly as
`predict` decodes them (`retrofit.batching.decode_members`).

Where only columns are removed (every row present), the per-column stage is shared: a column's
token before the column aggregator depends on nothing but the cells of its group's columns
(`OClosedTabPFNV3.column_tokens`), so it is computed once per distinct group over all the
coalitions of a call and gathered into each; only the stages that mix columns (the column
aggregator, on the present columns' tokens alone) and rows (the in-context blocks, the
readout) run per coalition. The values equal the unshared forward's up to rounding (the batch
layout differs).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tabpfn import TabPFNRegressor
from tabpfn.utils import get_autocast_context

from retrofit.adapters.tabpfn_v3 import o_targets
from retrofit.batching import MemberInput, decode_members, member_inputs
from retrofit.bounds import check_max_cells
from retrofit.errors import RetrofitError
from retrofit.hosts.checkpoint import regression_logits

MAX_CELLS = 65_536
"""Default bound on one forward: at most this many cells (coalitions x rows x columns of one
member; a single coalition over it runs alone). It bounds memory — the column stage's
activations are about cells x embedding width x 4 bytes times a small constant (tiny_v3, width
64: 16 MB per activation tensor at the default) — and is sized for the CPU, where a forward
whose intermediates stay near the caches runs faster per coalition than one large forward; on
an accelerator pass a larger bound (millions of cells)."""

PresenceFn = Callable[[int, MemberInput], tuple[torch.Tensor | None, torch.Tensor | None]]
"""(member index, member input) -> (row presence (K, N) of the train rows or None for all
present, column presence (K, C) or None), one row per coalition."""


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
    share_columns: bool = True,
) -> np.ndarray:
    """Mean predictions (n_coalitions, n_rows) of `regressor` on query rows `X`, coalition k with
    the presences `presence` gives it, in forwards of at most `max_cells` cells (see `MAX_CELLS`).

    `declare=True` passes the presences to the (o_closed) model; `declare=False` instead sets the
    absent cells (and absent rows' targets) to 0 and passes nothing — what a stock model can be
    given, used to measure what masking by value leaks. `share_columns`: where every row is
    present, run the per-column stage once per distinct column group (see the module docstring);
    False runs the whole forward per coalition."""
    check_max_cells(max_cells)
    members = member_inputs(0, regressor, X, "the query rows X")
    outputs = []
    for index, member in enumerate(members):
        N, T, C = member.shape
        per_forward = max(1, max_cells // ((N + T) * C))
        windows = [
            slice(start, min(start + per_forward, n_coalitions)) for start in range(0, n_coalitions, per_forward)
        ]
        p_train_KN, p_col_KC = presence(index, member)
        if declare and share_columns and p_train_KN is None and p_col_KC is not None and bool(p_col_KC.any()):
            chunks = [_forward_shared_columns(regressor, member, p_col_KC, max_cells)]
        else:
            chunks = [
                _forward(
                    regressor,
                    member,
                    window.stop - window.start,
                    None if p_train_KN is None else p_train_KN[window],
                    None if p_col_KC is None else p_col_KC[window],
                    declare,
                )
                for window in windows
            ]
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
    with get_autocast_context(regressor.devices_[0], enabled=regressor.use_autocast_), torch.inference_mode():
        if declare:
            return regressor.models_[0](x_RkC, y_Nk, row_presence=p_kR, column_presence=p_kC).float()
        x_RkC = torch.where((p_kR.T[:, :, None] * p_kC[None]) > 0, x_RkC, 0)
        y_Nk = torch.where(p_kR[:, :N].T > 0, y_Nk, 0)
        return regression_logits(regressor.models_[0], x_RkC, y_Nk).float()  # the stock model; v3.5 told the task


def _forward_shared_columns(
    regressor: TabPFNRegressor, member: MemberInput, p_KC: torch.Tensor, max_cells: int
) -> torch.Tensor:
    """Logits (T, K, buckets) of `member`'s table under the column presences `p_KC` (some column
    present somewhere), every row present. The column tokens are computed once per distinct
    column group over all K coalitions (`OClosedTabPFNV3.column_tokens`, in calls of at most
    `max_cells` cells; the table holds distinct groups x rows x width floats). Each coalition of
    s present columns then runs `forward_tokens` on its s tokens alone, in column order (the
    absent columns' tokens, null, dropped: the rank positions and every presence-weighted sum
    are those of the full layout), in forwards of at most `max_cells` cells per size s. The
    empty coalition runs the ordinary forward with every column absent."""
    model = regressor.models_[0]
    N, T, C = member.shape
    x_R1C = member.x_RC[:, None]
    p_KC = p_KC.to(x_R1C)
    ones_1R = x_R1C.new_ones(1, N + T)
    y_1N = o_targets(member.y_N, ones_1R[:, :N])
    present_KC = p_KC > 0
    sizes_K = present_KC.sum(1)
    logits_TKO = None
    with get_autocast_context(regressor.devices_[0], enabled=regressor.use_autocast_), torch.inference_mode():
        groups_UG, token_of_P = torch.unique(model.column_groups(p_KC)[present_KC], dim=0, return_inverse=True)
        per_call = max(1, max_cells // (N + T))
        tokens_URE = torch.cat(
            [
                model.column_tokens(
                    x_R1C, y_1N, ones_1R, x_R1C.new_ones(1, C), groups_UG[None, start : start + per_call]
                )[0].transpose(0, 1)
                for start in range(0, len(groups_UG), per_call)
            ]
        )
        token_of_KC = torch.full((len(p_KC), C), -1, dtype=torch.long)
        token_of_KC[present_KC] = token_of_P
        for size in sizes_K.unique().tolist():
            chosen_k = (sizes_K == size).nonzero()[:, 0]
            if size == 0:
                outputs = [_forward(regressor, member, len(chosen_k), None, p_KC[chosen_k], True)]
            else:
                tokens_kS = token_of_KC[chosen_k][present_KC[chosen_k]].view(-1, size)  # present columns, in order
                per_forward = max(1, max_cells // ((N + T) * size))
                outputs = []
                for start in range(0, len(chosen_k), per_forward):
                    x_kSRE = tokens_URE[tokens_kS[start : start + per_forward]]
                    k = x_kSRE.shape[0]
                    p_kR, p_kS = ones_1R.expand(k, -1), x_R1C.new_ones(k, size)
                    outputs.append(model.forward_tokens(x_kSRE.transpose(1, 2), y_1N.expand(k, N), p_kR, p_kS).float())
            chunk_TkO = torch.cat(outputs, dim=1)
            if logits_TKO is None:
                logits_TKO = chunk_TkO.new_empty(chunk_TkO.shape[0], len(p_KC), chunk_TkO.shape[2])
            logits_TKO[:, chosen_k] = chunk_TkO
    return logits_TKO
