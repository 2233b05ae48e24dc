"""Hidden-carrier OAttention on a tabpfn in-context attention module's own projections, and
the OAttention settings (`AttentionSettings`) every wrapper takes. B is the batch, folded with the
columns for the v2 family; N = `single_eval_pos`."""

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from retrofit.errors import RetrofitError
from retrofit.ops import check_eps_mode, o_attention_query_sets


@dataclass(frozen=True)
class AttentionSettings:
    """OAttention's settings in a retrofitted model, checked once here: `eps_den` the sink mass, a
    finite number > 0 (0 gives 0/0 on an empty support, inf or nan give no attention at all);
    `eps_mode` one of `retrofit.ops.EPS_MODES` (`retrofit.ops.check_eps_mode`, the check the operators
    make of their own inputs); `compact` true or false (gather the present keys).
    Every wrapper (in-context blocks, the closed column stage) takes one; RetrofitError naming the
    setting otherwise."""

    eps_den: float
    eps_mode: str = "absolute"
    compact: bool = False

    def __post_init__(self) -> None:
        number = isinstance(self.eps_den, int | float) and not isinstance(self.eps_den, bool)
        if not (number and math.isfinite(self.eps_den) and self.eps_den > 0):
            raise RetrofitError(
                f"eps_den must be a finite number > 0 (OAttention's sink mass, e.g. 1e-6), got {self.eps_den!r}"
            )
        check_eps_mode(self.eps_mode, fix="; set it in the variant")
        if not isinstance(self.compact, bool):
            raise RetrofitError(f"compact must be true or false, got {self.compact!r}")

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `retrofit.ops.o_attention` these settings stand for."""
        return {"eps_den": self.eps_den, "eps_mode": self.eps_mode, "compact": self.compact}


def in_context_qkv(
    attention: nn.Module,
    h_BRE: torch.Tensor,
    single_eval_pos: int,
    scale_queries: Callable[[torch.Tensor], torch.Tensor] | None = None,
    qk_norm: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries (B, R, H, D) of all rows, keys and values (B, N, G, D) of the N context rows,
    from `attention`'s own projections; with `qk_norm`, queries and keys through the
    attention's per-head `q_norm` / `k_norm` (tabpfn_v3_5), then `scale_queries` applied to
    the queries if given (tabpfn scales the normed queries)."""
    B, R, _ = h_BRE.shape
    N = single_eval_pos
    D = attention.head_dim
    q_BRHD = attention.q_projection(h_BRE).view(B, R, -1, D)
    context_BNE = h_BRE[:, :N]
    k_BNGD = attention.k_projection(context_BNE).view(B, N, -1, D)
    v_BNGD = attention.v_projection(context_BNE).view(B, N, -1, D)
    if qk_norm:
        q_BRHD, k_BNGD = attention.q_norm(q_BRHD), attention.k_norm(k_BNGD)
    if scale_queries is not None:
        q_BRHD = scale_queries(q_BRHD)
    return q_BRHD, k_BNGD, v_BNGD


def o_in_context_attention(
    attention: nn.Module,
    h_BRE: torch.Tensor,
    p_BR: torch.Tensor,
    single_eval_pos: int,
    *,
    test_kv_heads: int | None,
    settings: AttentionSettings,
    scale_queries: Callable[[torch.Tensor], torch.Tensor] | None = None,
    qk_norm: bool = False,
) -> torch.Tensor:
    """`attention`'s output with its softmax replaced by OAttention; returns (B, R, E).

    Every row attends to the N context rows only (tabpfn's train/test split, no test row sees
    another); rows past N use only the first `test_kv_heads` key/value heads when that is set
    (tabpfn's GQA/MQA for test rows), all G heads otherwise. `p_BR` is the presence of the
    hidden carriers of all rows: it gates receivers and weighs the N sources. `attention` must
    have bias-free `q_projection`, `k_projection`, `v_projection`, `out_projection` and
    `head_dim`, and `q_norm`, `k_norm` with `qk_norm`; `scale_queries` (B, R, H, D) -> same,
    applied before the scores, if given (see `in_context_qkv`).
    """
    B, R, _ = h_BRE.shape
    N = single_eval_pos
    q_BRHD, k_BNGD, v_BNGD = in_context_qkv(attention, h_BRE, N, scale_queries, qk_norm)

    p_BN = p_BR[:, :N]
    G = k_BNGD.shape[2]
    if test_kv_heads is None or N == R:
        query_sets = [(q_BRHD, p_BR, G)]
    else:
        query_sets = [(q_BRHD[:, :N], p_BN, G), (q_BRHD[:, N:], p_BR[:, N:], test_kv_heads)]
    outs_BHSD = o_attention_query_sets(
        [(q_BSHD.transpose(1, 2), p_BS, kv_heads) for q_BSHD, p_BS, kv_heads in query_sets],
        k_BNGD.transpose(1, 2),
        v_BNGD.transpose(1, 2),
        p_BN,
        **settings.kwargs(),
    )
    outs_BSHD = [out_BHSD.transpose(1, 2) for out_BHSD in outs_BHSD]
    out_BRHD = outs_BSHD[0] if len(outs_BSHD) == 1 else torch.cat(outs_BSHD, dim=1)
    return attention.out_projection(out_BRHD.reshape(B, R, -1))
