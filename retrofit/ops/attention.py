"""OAttention (docs/method.md, "OAttention"): fused on SDPA, compact, and direct (materialised) evaluation.

Two sink semantics (`eps_mode`), with W_i = sum_j m_ij p_j exp(s_ij), s_ij = q_i . k_j / sqrt(D):

    absolute:  out_i = p_i * sum_j m_ij p_j exp(s_ij) v_j / (eps_den + W_i)
    relative:  out_i = p_i * sum_j m_ij p_j exp(s_ij) v_j / ((1 + eps_den) W_i),  0 when W_i = 0

`absolute` (the paper's formula) puts the sink at logit `log eps_den`: a query whose logits are
all far below it gives ~0. `relative` puts it at `log eps_den + log W_i`, so the sink always
takes the share eps_den / (1 + eps_den) and the output is invariant to shifting the logits of a
query; only empty support (every visible source null) gives 0.

Values may have a head dim Dv of their own. `mask` is bool, broadcastable to (B, H, Q, K), True =
visible.
Presences are in [0, 1]; an entry <= 0 is treated as null (p = 0).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from retrofit.ops.attention_inputs import EPS_MODES, check_eps_mode, check_inputs
from retrofit.ops.presence import accumulation_dtype, as_dtype

__all__ = [
    "EPS_MODES",
    "check_eps_mode",
    "o_attention",
    "o_attention_materialised",
    "o_attention_query_sets",
    "o_attention_reference",
]


def o_attention(
    q_BHQD: torch.Tensor,
    k_BGKD: torch.Tensor,
    v_BGKD: torch.Tensor,
    p_BQ: torch.Tensor,
    p_BK: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    eps_den: float = 1e-6,
    eps_mode: str = "absolute",
    compact: bool = False,
) -> torch.Tensor:
    """OAttention on `torch.nn.functional.scaled_dot_product_attention`; returns (B, H, Q, Dv).

    `log p_k` enters as an additive fp32 bias (B, 1, 1, K) and `eps_den` as a sink key with
    logit `log eps_den` and value 0, so `eps_den` is in absolute exp units whatever the kernel's
    max-subtraction. No Q x K buffer is allocated unless a dense `mask` is given.
    Exact by construction: null receivers (p_q = 0) give 0.0; empty support (every visible
    key null or masked) gives 0.0, never NaN, in every dtype. With `compact=True` the present
    keys and queries are gathered in order (padded per batch with null rows) before the kernel,
    so inserting null tokens anywhere leaves all other outputs bitwise equal. Differentiable;
    the gradient w.r.t. a presence that is exactly 0 is 0 (harmless: presence(h) has
    dp/dh = 0 at h = 0). GQA/MQA: k, v may have G heads with H % G == 0 (SDPA's enable_gqa).
    The result is in q's dtype.
    `eps_mode="relative"` runs SDPA over the keys alone (no sink key, no copy of k, v) and
    scales by p_q / (1 + eps_den); rows with empty support are detected from the bias (B x K
    without a mask) and set to 0, with the same exactness contracts.
    """
    check_inputs(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)
    if compact:
        return _compact(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)
    return _fused(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)


def o_attention_query_sets(
    query_sets: Sequence[tuple[torch.Tensor, torch.Tensor, int]],
    k_BGKD: torch.Tensor,
    v_BGKD: torch.Tensor,
    p_BK: torch.Tensor,
    *,
    eps_den: float = 1e-6,
    eps_mode: str = "absolute",
    compact: bool = False,
) -> list[torch.Tensor]:
    """OAttention of several query sets on the same keys, each set `(q_BHQD, p_BQ, kv_heads)` on
    the first `kv_heads` key/value heads (e.g. a model whose test rows read fewer heads than its
    train rows); returns one (B, H, Q, Dv) per set.

    Contract: each result is bitwise `o_attention(q, k[:, :kv_heads], v[:, :kv_heads], p_q, p_k,
    ...)` (no mask), with the same checks; the key-side terms (the log-presence bias and, with
    `absolute`, the sink logit) are computed once for all sets instead of once per set. With
    `compact` each set is gathered on its own, as `o_attention` does.
    """
    G = k_BGKD.shape[1]
    heads = [(k_BGKD, v_BGKD) if g == G else (k_BGKD[:, :g], v_BGKD[:, :g]) for _, _, g in query_sets]
    for (q_BHQD, p_BQ, _), (k_BgKD, v_BgKD) in zip(query_sets, heads, strict=True):
        check_inputs(q_BHQD, k_BgKD, v_BgKD, p_BQ, p_BK, None, eps_den, eps_mode)
    if compact:
        return [
            _compact(q_BHQD, k_BgKD, v_BgKD, p_BQ, p_BK, None, eps_den, eps_mode)
            for (q_BHQD, p_BQ, _), (k_BgKD, v_BgKD) in zip(query_sets, heads, strict=True)
        ]
    terms: dict[torch.dtype, _KeyTerms] = {}
    outs = []
    for (q_BHQD, p_BQ, _), (k_BgKD, v_BgKD) in zip(query_sets, heads, strict=True):
        acc_dtype = accumulation_dtype(q_BHQD.dtype)
        if acc_dtype not in terms:
            terms[acc_dtype] = _key_terms(p_BK, None, eps_den, eps_mode, acc_dtype)
        outs.append(_attend(q_BHQD, k_BgKD, v_BgKD, p_BQ, terms[acc_dtype], eps_den, eps_mode))
    return outs


def o_attention_reference(
    q_BHQD: torch.Tensor,
    k_BGKD: torch.Tensor,
    v_BGKD: torch.Tensor,
    p_BQ: torch.Tensor,
    p_BK: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    eps_den: float = 1e-6,
    eps_mode: str = "absolute",
    compact: bool = False,
) -> torch.Tensor:
    """Ground truth: the formula evaluated directly in float64; returns float64 (B, H, Q, Dv).

    Max-subtracted with the row max taken over the visible logits (and, for `absolute`, the
    sink logit `log eps_den`, so `eps_den` is rescaled by exp(-max) exactly); empty rows give 0.
    `compact` is accepted for signature parity; it does not change the mathematics.
    """
    check_inputs(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)
    return _direct(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode, torch.float64)


def o_attention_materialised(
    q_BHQD: torch.Tensor,
    k_BGKD: torch.Tensor,
    v_BGKD: torch.Tensor,
    p_BQ: torch.Tensor,
    p_BK: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    eps_den: float = 1e-6,
    eps_mode: str = "absolute",
) -> torch.Tensor:
    """The naive baseline: the same direct evaluation as the reference, in q's dtype.

    Materialises the (B, H, Q, K) scores; for benchmarks and exactness comparisons only.
    """
    check_inputs(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)
    return _direct(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode, q_BHQD.dtype)


def _fused(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode):
    """SDPA with the log-presence bias, then receiver gating (`_key_terms`, then `_attend`)."""
    terms = _key_terms(p_BK, mask, eps_den, eps_mode, accumulation_dtype(q_BHQD.dtype))
    return _attend(q_BHQD, k_BGKD, v_BGKD, p_BQ, terms, eps_den, eps_mode)


@dataclass(frozen=True)
class _KeyTerms:
    """What OAttention computes from the keys' presences (and the mask) alone, in the accumulation
    dtype: the additive bias `log p_k` (-inf where masked), with `absolute` the sink key's logit
    `log eps_den` appended; with `relative` the rows with no visible present key (`empty_bhQ1`),
    whose bias is set to 0 so the kernel never meets an all -inf row."""

    bias_bhQK: torch.Tensor
    empty_bhQ1: torch.Tensor | None


def _key_terms(p_BK, mask, eps_den, eps_mode, acc_dtype) -> _KeyTerms:
    """`_KeyTerms` of keys with presences `p_BK` (B, K); the sink logit appended by padding the
    bias (one operation). Dtype casts that would not change the dtype are skipped."""
    B, K = p_BK.shape
    bias_bhQK = _log_presence(as_dtype(p_BK, acc_dtype)).view(B, 1, 1, K)
    if mask is not None:
        bias_bhQK = torch.where(mask, bias_bhQK, -math.inf)
    if eps_mode == "absolute":
        return _KeyTerms(F.pad(bias_bhQK, (0, 1), value=math.log(eps_den)), None)
    empty_bhQ1 = (bias_bhQK == -math.inf).all(-1, keepdim=True)
    return _KeyTerms(bias_bhQK.masked_fill(empty_bhQ1, 0.0), empty_bhQ1)


def _attend(q_BHQD, k_BGKD, v_BGKD, p_BQ, terms: _KeyTerms, eps_den, eps_mode):
    """SDPA of the queries on `terms`' bias, then receiver gating.

    absolute: one extra sink key (value 0) in the same kernel call, appended by padding keys and
    values (one operation each); the gate p_q. relative: the keys alone; a zero gate on rows with
    empty support, p_q / (1 + eps_den) on the others.
    Dtype casts that would not change the dtype are skipped (nothing dispatched for them).
    """
    B, G = k_BGKD.shape[:2]
    acc_dtype = accumulation_dtype(q_BHQD.dtype)
    gate_bhQ1 = as_dtype(p_BQ, acc_dtype).view(B, 1, p_BQ.shape[1], 1)
    if eps_mode == "absolute":
        k_BGKD, v_BGKD = F.pad(k_BGKD, (0, 0, 0, 1)), F.pad(v_BGKD, (0, 0, 0, 1))
    else:
        gate_bhQ1 = torch.where(terms.empty_bhQ1, 0.0, gate_bhQ1 / (1 + eps_den))
    H = q_BHQD.shape[1]
    if G == 1 < H:
        # MQA as a stride-0 view of the one key/value head: the same bits as SDPA's GQA path,
        # which is slower on CPU.
        k_BGKD = k_BGKD.expand(B, H, *k_BGKD.shape[2:])
        v_BGKD = v_BGKD.expand(B, H, *v_BGKD.shape[2:])
    out_BHQD = F.scaled_dot_product_attention(
        q_BHQD, k_BGKD, v_BGKD, attn_mask=terms.bias_bhQK, enable_gqa=k_BGKD.shape[1] != H
    )
    if out_BHQD.dtype == acc_dtype and not out_BHQD.requires_grad:
        return out_BHQD.mul_(gate_bhQ1)  # in place: saves one output-sized buffer
    return as_dtype(as_dtype(out_BHQD, acc_dtype) * gate_bhQ1, q_BHQD.dtype)


def _compact(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode):
    """`_compact_equal` per group of batch elements with equal (present queries, present keys)
    counts, so no element is padded to another's count: CPU kernels round differently for
    different lengths, and an element's result must not depend on which others share its batch.
    Elements without a present query give 0 without a kernel call (unless no element has one: then
    the zeros come from one gather of nothing, so they stay on the autograd graph).
    """
    counts_B2 = torch.stack([(p_BQ > 0).sum(1), (p_BK > 0).sum(1)], dim=1)
    groups_G2 = counts_B2.unique(dim=0)
    if len(groups_G2) == 1 or not (groups_G2[:, 0] > 0).any():  # one group, or no present query at all:
        return _compact_equal(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)  # zeros on the graph
    B, H, Q, _ = q_BHQD.shape
    out_BHQD = q_BHQD.new_zeros(B, H, Q, v_BGKD.shape[-1])
    if mask is not None:
        mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    for counts_2 in groups_G2[groups_G2[:, 0] > 0]:
        i_b = (counts_B2 == counts_2).all(1).nonzero()[:, 0]
        mask_b = None if mask is None else mask[i_b] if mask.shape[0] > 1 else mask
        out_BHQD[i_b] = _compact_equal(
            q_BHQD[i_b], k_BGKD[i_b], v_BGKD[i_b], p_BQ[i_b], p_BK[i_b], mask_b, eps_den, eps_mode
        ).to(out_BHQD.dtype)
    return out_BHQD


def _compact_equal(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode):
    """Gather present queries and keys (in order, padded per batch), run `_fused`, scatter back.

    An axis whose tokens are all present is used as it is: its gather would be the identity.
    """
    iq_BN, ik_BM = _present_index(p_BQ), _present_index(p_BK)
    if mask is not None:
        mask = _gather_mask(mask, iq_BN, ik_BM)
    if ik_BM is not None:
        k_BGKD, v_BGKD, p_BK = _gather_tokens(k_BGKD, ik_BM), _gather_tokens(v_BGKD, ik_BM), p_BK.gather(1, ik_BM)
    if iq_BN is None:
        return _fused(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode)
    q_BHND, p_BN = _gather_tokens(q_BHQD, iq_BN), p_BQ.gather(1, iq_BN)
    out_BHND = _fused(q_BHND, k_BGKD, v_BGKD, p_BN, p_BK, mask, eps_den, eps_mode)
    B, H, Q, _ = q_BHQD.shape
    index_BHND = iq_BN[:, None, :, None].expand_as(out_BHND)
    return out_BHND.new_zeros(B, H, Q, out_BHND.shape[-1]).scatter(2, index_BHND, out_BHND)


def _present_index(p_BL: torch.Tensor) -> torch.Tensor | None:
    """(B, N) indices of the present tokens (p > 0) of each batch in order, N = max present
    count; None when every token is present (the gather would be the identity).

    Batches with fewer present tokens are padded with their own null tokens (p = 0), which
    OAttention weighs by exactly 0, so the padding never changes a result.
    """
    null_BL = (p_BL <= 0).to(torch.uint8)
    if not null_BL.any():
        return None
    n = int(p_BL.shape[1] - null_BL.sum(1).min())
    return torch.argsort(null_BL, dim=1, stable=True)[:, :n]


def _gather_tokens(x_BHLD: torch.Tensor, i_BN: torch.Tensor) -> torch.Tensor:
    """Rows `i_BN` of the token axis of x (B, H, L, D) -> (B, H, N, D)."""
    B, H, _, D = x_BHLD.shape
    return x_BHLD.gather(2, i_BN[:, None, :, None].expand(B, H, i_BN.shape[1], D))


def _gather_mask(mask: torch.Tensor, iq_BN: torch.Tensor | None, ik_BM: torch.Tensor | None) -> torch.Tensor:
    """Restrict a mask broadcastable to (B, H, Q, K) to the gathered queries and keys."""
    mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    for dim, i_BN in ((2, iq_BN), (3, ik_BM)):
        if i_BN is not None and mask.shape[dim] > 1:
            mask = mask.expand(i_BN.shape[0], -1, -1, -1)
            shape = [i_BN.shape[0], 1, 1, 1]
            shape[dim] = i_BN.shape[1]
            index = i_BN.reshape(shape).expand(*mask.shape[:dim], i_BN.shape[1], *mask.shape[dim + 1 :])
            mask = mask.gather(dim, index)
    return mask


def _log_presence(p: torch.Tensor) -> torch.Tensor:
    """log p with log(0) = -inf for every entry <= 0 (or NaN) and a zero (not NaN) gradient at
    those entries.

    With a gradient to carry (`p.requires_grad`): the logarithm of `where(p > 0, p, 0)`, whose
    backward gives p nothing where it picked the constant. Without one: `log p` with its NaNs
    (from p < 0 or p NaN) set to -inf, one operation fewer and the same values bit for bit
    (log(0) is already -inf; +inf and every finite log pass unchanged). Decided on a Python
    attribute: nothing is dispatched for the choice.
    """
    if p.requires_grad:
        return torch.where(p > 0, p, 0.0).log()
    return p.log().nan_to_num(nan=-math.inf, posinf=math.inf, neginf=-math.inf)


def _direct(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode, dtype):
    """The formula materialised in `dtype`, max-subtracted (absolute: including the sink logit)."""
    groups = q_BHQD.shape[1] // k_BGKD.shape[1]
    q_BHQD = q_BHQD.to(dtype)
    k_BHKD = k_BGKD.to(dtype).repeat_interleave(groups, dim=1)
    v_BHKD = v_BGKD.to(dtype).repeat_interleave(groups, dim=1)
    s_BHQK = q_BHQD @ k_BHKD.transpose(-1, -2) / math.sqrt(q_BHQD.shape[-1])
    logit_BHQK = s_BHQK + _log_presence(p_BK.to(dtype))[:, None, None, :]
    if mask is not None:
        logit_BHQK = logit_BHQK.masked_fill(~mask, -math.inf)
    p_B1Q1 = p_BQ.to(dtype)[:, None, :, None]
    if eps_mode == "absolute":
        log_eps = math.log(eps_den)
        max_BHQ1 = logit_BHQK.amax(-1, keepdim=True).clamp_min(log_eps)
        e_BHQK = torch.exp(logit_BHQK - max_BHQ1)
        den_BHQ1 = e_BHQK.sum(-1, keepdim=True) + torch.exp(log_eps - max_BHQ1)
        return p_B1Q1 * (e_BHQK @ v_BHKD) / den_BHQ1
    max_BHQ1 = logit_BHQK.amax(-1, keepdim=True)
    e_BHQK = torch.exp(logit_BHQK - max_BHQ1.masked_fill(max_BHQ1 == -math.inf, 0.0))
    den_BHQ1 = e_BHQK.sum(-1, keepdim=True)
    return p_B1Q1 * (e_BHQK @ v_BHKD) / ((1 + eps_den) * den_BHQ1.masked_fill(den_BHQ1 == 0, 1.0))
