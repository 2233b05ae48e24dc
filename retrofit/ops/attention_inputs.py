"""OAttention's arguments checked: its sink semantics (`EPS_MODES`) and its inputs' shapes, dtypes and
`eps_den`, each problem named with its fix (`retrofit.ops.attention` runs the check)."""

import torch

from retrofit.errors import RetrofitError

EPS_MODES = ("absolute", "relative")
"""OAttention's sink semantics: the sink logit is `log eps_den` or `log eps_den + log W_i`."""


def check_eps_mode(eps_mode: str, where: str = "", fix: str = "") -> None:
    """RetrofitError unless `eps_mode` is one of `EPS_MODES`: the one check of the sink semantics, by
    the operators on their own inputs and by `retrofit.adapters.AttentionSettings` (`where` prefixes
    the message, `fix` ends it)."""
    if eps_mode not in EPS_MODES:
        raise RetrofitError(f"{where}eps_mode must be one of {EPS_MODES}, got {eps_mode!r}{fix}")


def check_inputs(q_BHQD, k_BGKD, v_BGKD, p_BQ, p_BK, mask, eps_den, eps_mode) -> None:
    """Raise ValueError naming the first shape/dtype/argument problem and how to fix it."""
    check_eps_mode(eps_mode, "o_attention: ")
    if q_BHQD.dim() != 4 or k_BGKD.dim() != 4 or v_BGKD.dim() != 4:
        raise ValueError(
            "o_attention: q, k, v must be 4-D (B, H, L, D); got shapes "
            f"{tuple(q_BHQD.shape)}, {tuple(k_BGKD.shape)}, {tuple(v_BGKD.shape)}. "
            "Split heads first, e.g. x.view(B, L, H, D).transpose(1, 2)."
        )
    B, H, Q, D = q_BHQD.shape
    _, G, K, _ = k_BGKD.shape
    if k_BGKD.shape[:3] != v_BGKD.shape[:3] or k_BGKD.shape[0] != B or k_BGKD.shape[3] != D:
        raise ValueError(
            f"o_attention: k {tuple(k_BGKD.shape)} and v {tuple(v_BGKD.shape)} must share (B, G, K) "
            f"with q {tuple(q_BHQD.shape)}'s batch B and k's head dim D equal to q's."
        )
    if H % G:
        raise ValueError(
            f"o_attention: q has {H} heads and k/v have {G}; query heads must be a multiple of "
            "key/value heads (GQA/MQA); repeat k/v heads to match otherwise."
        )
    if tuple(p_BQ.shape) != (B, Q) or tuple(p_BK.shape) != (B, K):
        raise ValueError(
            f"o_attention: presences must be p_q (B, Q) = {(B, Q)} and p_k (B, K) = {(B, K)}; "
            f"got {tuple(p_BQ.shape)} and {tuple(p_BK.shape)}. Use presence(h, tau) on (B, L, E)."
        )
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(
            f"o_attention: mask must be bool (True = visible), got {mask.dtype}; additive float "
            "masks are not supported: pass `mask=float_mask > -inf` or fold it into presences."
        )
    if not eps_den > 0:
        raise ValueError(
            f"o_attention: eps_den must be > 0 (got {eps_den!r}); it is the sink mass that "
            "makes empty support give 0 instead of 0/0."
        )
