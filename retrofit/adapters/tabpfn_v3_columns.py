"""tabpfn_v3's column stage with OAttention: the feature distribution embedder and the column
aggregator on the host's own submodules, with structural cell presence.

Stock dataflow (`TabPFNV3._process_row_chunk`): per column, an induced self-attention
(`InducedSelfAttentionBlock`: inducing points attend to the column's train cells, then every
cell attends to the inducing points); per row, a transformer over [CLS tokens, cells] with RoPE
over the token index, whose last block reads the CLS tokens out (CLS queries, all tokens as
keys). Here every attention is OAttention weighted by the tokens' presence (a cell: its row's
times its column's; a CLS token: its row's; an inducing point: 1), the FFNs are OFFN, the
softmax scaling counts the keys' presence mass, CLS tokens are injected with OInject, and RoPE
positions count present tokens only, so an absent column moves no position. The norms are
RMSNorms (0 -> 0) and every projection is bias-free, so an absent token stays exactly 0.
With `qk_norm` (tabpfn_v3_5) every attention also normalises its queries and keys per head with
the host's `q_norm` / `k_norm` (RMSNorms: a zero query or key stays 0), as the host does: after
the projections in the distribution embedder, after RoPE in the aggregator.
Shapes: B batch, R rows, N train rows, C columns, T = CLS tokens + C, I inducing points,
E embedding, H heads, D head dim; `b` a folded batch (B*C columns or B*R rows).
"""

from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from retrofit.adapters.attention import AttentionSettings
from retrofit.adapters.chunks import chunk_slices, per_token_in_chunks, replace_in_chunks
from retrofit.adapters.tabpfn_v3 import scale_queries
from retrofit.ops import o_attention, o_ffn, o_inject


def o_distribution_embedder(
    embedder: nn.Module,
    x_BRCE: torch.Tensor,
    p_BRC: torch.Tensor,
    num_train: int,
    attention: AttentionSettings,
    qk_norm: bool = False,
    save_peak_memory_factor: int | None = None,
) -> torch.Tensor:
    """`FeatureDistributionEmbedder` on cells (B, R, C, E) with presence (B, R, C); same shape.

    `attention`: the OAttention settings (`AttentionSettings`); `qk_norm`: the host normalises
    queries and keys per head (see the module docstring); `save_peak_memory_factor`: each layer
    runs in that many chunks of the B * C columns, as tabpfn's memory saving runs it
    (`retrofit.adapters.chunks`; a column's result depends on that column alone), writing each
    chunk back in place: then `x_BRCE` may be overwritten (pass one nobody reads again).
    """
    B, R, C, E = x_BRCE.shape
    x_bRE = x_BRCE.transpose(1, 2).reshape(B * C, R, E)
    p_bR = p_BRC.transpose(1, 2).reshape(B * C, R)
    for layer in embedder.layers:
        induced = partial(_o_induced_block, layer, num_train=num_train, attention=attention, qk_norm=qk_norm)
        x_bRE = replace_in_chunks(induced, save_peak_memory_factor, x_bRE, p_bR)
    return x_bRE.view(B, C, R, E).transpose(1, 2)


def _o_induced_block(
    layer: nn.Module,
    x_bRE: torch.Tensor,
    p_bR: torch.Tensor,
    *,
    num_train: int,
    attention: AttentionSettings,
    qk_norm: bool,
) -> torch.Tensor:
    """tabpfn_v3 `InducedSelfAttentionBlock` on columns (b, R, E): the inducing points attend to
    the column's train cells, then every cell attends to the inducing points."""
    inducing_bIE = layer.inducing_vectors.expand(x_bRE.shape[0], -1, -1)
    p_bI = p_bR.new_ones(inducing_bIE.shape[:2])
    hidden_bIE = _o_cross_block(
        layer.cross_attn_block1, inducing_bIE, x_bRE[:, :num_train], p_bI, p_bR[:, :num_train], attention, qk_norm
    )
    return _o_cross_block(layer.cross_attn_block2, x_bRE, hidden_bIE, p_bR, p_bI, attention, qk_norm)


def o_column_aggregator(
    aggregator: nn.Module,
    x_BRCE: torch.Tensor,
    p_BR: torch.Tensor,
    p_BC: torch.Tensor,
    attention: AttentionSettings,
    qk_norm: bool = False,
    save_peak_memory_factor: int | None = None,
) -> torch.Tensor:
    """`ColumnAggregator` on cells (B, R, C, E): the CLS readout (B, R, CLS, E), 0 for absent rows.
    `save_peak_memory_factor`: every block but the last (the CLS readout, unchunked as in tabpfn)
    runs its attention in that many chunks of the rows and its FFN in that many chunks of the
    tokens, as tabpfn's memory saving runs them."""
    B, R, _, E = x_BRCE.shape
    factor = save_peak_memory_factor
    n_cls = aggregator.num_cls_tokens
    cls_BRLE = o_inject(aggregator.cls_tokens.expand(B, R, n_cls, E), p_BR[:, :, None].expand(B, R, n_cls))
    x_bTE = torch.cat([cls_BRLE, x_BRCE], dim=2).flatten(0, 1)
    p_BT = torch.cat([p_BC.new_ones(B, n_cls), p_BC], dim=1)
    p_bT = (p_BR[:, :, None] * p_BT[:, None, :]).flatten(0, 1)
    rope = _RankRope(aggregator.rope, ((p_BT > 0).cumsum(1) - 1).clamp(min=0))
    self_attention = partial(_o_self_attention, rope=rope, attention=attention, qk_norm=qk_norm)
    for block in aggregator.blocks[:-1]:

        def attended(x_bTE: torch.Tensor, p_bT: torch.Tensor, block: nn.Module = block) -> torch.Tensor:
            h_bTE = block.layernorm(x_bTE)
            return x_bTE + self_attention(block.attention, h_bTE, h_bTE, p_bT, p_bT)

        x_bTE = _in_row_chunks(attended, factor, B, x_bTE, p_bT)
        x_bTE = per_token_in_chunks(partial(o_ffn, ffn=block.mlp, norm=block.layernorm_mlp), factor, x_bTE, p_bT)
    last = aggregator.blocks[-1]
    cls_bLE, p_bL = x_bTE[:, :n_cls], p_bT[:, :n_cls]
    attended_bLE = self_attention(last.attention, last.layernorm(cls_bLE), last.layernorm(x_bTE), p_bL, p_bT)
    cls_bLE = o_ffn(cls_bLE + attended_bLE, p_bL, last.mlp, last.layernorm_mlp)
    return aggregator.out_ln(cls_bLE).view(B, R, n_cls, E)


def _in_row_chunks(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    factor: int | None,
    B: int,
    x_bTE: torch.Tensor,
    p_bT: torch.Tensor,
) -> torch.Tensor:
    """`fn(x, p)` of the folded rows b = B * R (a row's result depends on that row alone), in
    `factor` chunks of each table's R rows, every chunk holding the same rows of all B tables (the
    rank RoPE's positions are per table), written into `x_bTE` (contiguous, the caller's own);
    `fn(x, p)` itself without `factor`."""
    if factor is None:
        return fn(x_bTE, p_bT)
    x_BRTE, p_BRT = x_bTE.view(B, -1, *x_bTE.shape[1:]), p_bT.view(B, -1, p_bT.shape[1])
    for rows in chunk_slices(x_BRTE.shape[1], factor):
        out_bTE = fn(x_BRTE[:, rows].flatten(0, 1), p_BRT[:, rows].flatten(0, 1))
        x_BRTE[:, rows] = out_bTE.view(B, -1, *x_bTE.shape[1:])
    return x_bTE


def _o_cross_block(
    block: nn.Module,
    x_bQE: torch.Tensor,
    context_bKE: torch.Tensor,
    p_bQ: torch.Tensor,
    p_bK: torch.Tensor,
    attention: AttentionSettings,
    qk_norm: bool,
) -> torch.Tensor:
    """tabpfn_v3 `CrossAttentionBlock`: `x + attn(norm_q(x), norm_kv(context))`, then OFFN."""
    attn = block.attn
    b, Q, _ = x_bQE.shape
    K, D = context_bKE.shape[1], attn.head_dim
    q_bQHD = attn.q_projection(block.layernorm_q(x_bQE)).view(b, Q, -1, D)
    kv_bKE = block.layernorm_kv(context_bKE)
    k_bKHD = attn.k_projection(kv_bKE).view(b, K, -1, D)
    v_bKHD = attn.v_projection(kv_bKE).view(b, K, -1, D)
    if qk_norm:
        q_bQHD, k_bKHD = attn.q_norm(q_bQHD), attn.k_norm(k_bKHD)
    if attn.softmax_scaling_layer is not None:
        q_bQHD = scale_queries(attn.softmax_scaling_layer, q_bQHD, n_B=p_bK.sum(1, dtype=torch.float64))
    out_bHQD = o_attention(
        q_bQHD.transpose(1, 2), k_bKHD.transpose(1, 2), v_bKHD.transpose(1, 2), p_bQ, p_bK, **attention.kwargs()
    )
    x_bQE = x_bQE + attn.out_projection(out_bHQD.transpose(1, 2).reshape(b, Q, -1))
    return o_ffn(x_bQE, p_bQ, block.mlp, block.layernorm2)


def _o_self_attention(
    attn: nn.Module,
    h_query_bQE: torch.Tensor,
    h_bTE: torch.Tensor,
    p_bQ: torch.Tensor,
    p_bT: torch.Tensor,
    rope: "_RankRope",
    attention: AttentionSettings,
    qk_norm: bool,
) -> torch.Tensor:
    """tabpfn_v3 `Attention` (the aggregator's) with OAttention; queries are the first Q tokens."""
    b, Q, _ = h_query_bQE.shape
    T, D = h_bTE.shape[1], attn.head_dim
    q_bHQD = rope(attn.q_projection(h_query_bQE).view(b, Q, -1, D).transpose(1, 2))
    k_bHTD = rope(attn.k_projection(h_bTE).view(b, T, -1, D).transpose(1, 2))
    v_bHTD = attn.v_projection(h_bTE).view(b, T, -1, D).transpose(1, 2)
    if qk_norm:
        q_bHQD, k_bHTD = attn.q_norm(q_bHQD), attn.k_norm(k_bHTD)
    out_bHQD = o_attention(q_bHQD, k_bHTD, v_bHTD, p_bQ, p_bT, **attention.kwargs())
    return attn.out_projection(out_bHQD.transpose(1, 2).reshape(b, Q, -1))


class _RankRope:
    """The host's rotary embedding with given token positions (the rank among present tokens).

    Same arithmetic as `tabpfn.architectures.tabpfn_v3.apply_rope`, which uses 0..S-1; the first
    S positions of `positions_BT` serve a sequence of S tokens. The rows of a table share their
    positions, so the angles are computed per table (B, S) and broadcast over its R rows of the
    folded batch b = B * R. `rope=None`: identity.
    """

    def __init__(self, rope: nn.Module | None, positions_BT: torch.Tensor):
        self.rope, self.positions_BT = rope, positions_BT

    def __call__(self, t_bHSD: torch.Tensor) -> torch.Tensor:
        if self.rope is None:
            return t_bHSD
        inv_freq = self.rope.freqs
        b, H, S, D = t_bHSD.shape
        B = self.positions_BT.shape[0]
        t_BRHSD = t_bHSD.view(B, b // B, H, S, D)
        freqs_B11SF = self.positions_BT[:, None, None, :S, None].to(inv_freq.dtype) * inv_freq
        cos, sin = freqs_B11SF.cos(), freqs_B11SF.sin()
        if self.rope.interleaved:
            cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
            rotated = torch.stack((-t_BRHSD[..., 1::2], t_BRHSD[..., 0::2]), dim=-1).flatten(-2)
        else:
            cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
            rotated = torch.cat((-t_BRHSD[..., D // 2 :], t_BRHSD[..., : D // 2]), dim=-1)
        return (t_BRHSD * cos + rotated * sin).to(t_bHSD.dtype).view(b, H, S, D)
