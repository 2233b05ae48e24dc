"""tabpfn_v3's adapters, registered as the `tabpfn_v3` architecture: the O wrapper of its
in-context blocks (`OICLBlockV3`) and the whole model O-closed from the raw input to the readout
(`OClosedTabPFNV3`, the `o_closed` variant). Read top to bottom: the block, then the closed
model's stages in the order they run (input, columns, the model), then the registration.

In-context block (`ICLTransformerBlock`, pre-norm): `x += icl_attention(layernorm(x))`, then
`x += mlp(layernorm_mlp(x))`, x (B, R, E). Hidden carrier: `x` entering each residual branch (not
`layernorm(x)`).

Whole model: absence is declared at the model's input, where tabpfn's preprocessing (per ensemble
member, on the CPU, before the model) has already run: `forward(x, y, ..., row_presence=p_BR,
column_presence=p_BC)`, x (R, B, C) with the N = len(y) train rows first, p 1 = present,
0 = absent (structural; nothing in between). An absent row or column is a null token from its
first carrier on: its cells (whatever they hold; padding uses zeros) carry no mass in any
statistic, get exactly-0 carriers, and every other output is unchanged up to rounding (bitwise
with `compact`). Without presence everything is present and the model computes the stock
dataflow with O operators (the `full_o` in-context stage plus the closed stages below).
Stages, each on the host's own submodules:
  input       presence-weighted imputation and standardisation, rank-based feature grouping;
  embedding   `x_embed` and the column label embedding injected with OInject (their biases
              would otherwise turn an absent cell into a non-zero carrier);
  columns     the distribution embedder and the column aggregator with OAttention, OFFN,
              presence-mass softmax scaling, OInject of the CLS tokens, rank RoPE;
  labels      the in-context label embedding injected with OInject;
  in-context  the host's `icl_blocks`, wrapped by `OICLBlockV3` (hidden-carrier presence);
  readout     `output_norm` (RMSNorm, 0 -> 0) and `output_projection` per test row, gated by
              the row's presence: an absent test row reads out exactly 0 logits (with `compact`,
              the projection runs per batch element on its present test rows alone).
With tabpfn's memory saving on (forced or automatic: `performance_options.save_peak_memory_factor`)
the distribution embedder, the column aggregator and the in-context blocks run in the chunks
tabpfn runs the stock model in (`retrofit.adapters.chunks`), and with tabpfn's chunked inference
(`use_chunkwise_inference`, tabpfn_v3's default) the stages before the blocks run in its chunks of
rows (`inference_chunk_cells`) after the inducing points have read the train rows in its chunks of
columns (`inference_col_chunk_size`), as the stock model runs them, halving either chunk after
running out of GPU memory as tabpfn does; tabpfn's KV cache is not used. Regression hosts only.
"""

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters.block import KV_CACHE_REFUSAL, AttentionRecord, OBlock
from retrofit.adapters.chunks import chunk_slices, halving_after_oom, per_token_in_chunks, replace_in_chunks
from retrofit.adapters.closed_model import OClosedModel
from retrofit.adapters.in_context_attention import AttentionSettings, in_context_qkv, o_in_context_attention
from retrofit.adapters.registry import ArchitectureSpec, register_architecture
from retrofit.errors import RetrofitError
from retrofit.ops import o_attention, o_ffn, o_inject
from retrofit.ops.presence import as_dtype
from retrofit.tabpfn_internals import embed_col_y, embed_icl_y, nan_and_inf_indicator, nan_safe_output

# ---------------------------------------------------------------------------------------------
# The in-context block.


def scale_queries(layer: torch.nn.Module, q_BRHD: torch.Tensor, n_B: torch.Tensor) -> torch.Tensor:
    """tabpfn_v3's `SoftmaxScalingMLP` with a per-batch key count `n_B` instead of the length.

    `q * base_mlp(log n) * (1 + tanh(query_mlp(q)))`, log n clamped at n >= 1 as tabpfn does.
    OAttention passes the presence mass of the keys, `n = sum_j p_j`: a null source adds no
    mass, so inserting one leaves the query scale unchanged (it would move `log(length)`). The
    mass is summed in float64, where adding zeros cannot change the rounding of the sum.
    `base_mlp` runs once per distinct mass on that one value, as tabpfn runs it on its one
    length: CPU matmul kernels round differently for different row counts, so a batch element's
    scale must not depend on how many others share its batch (one batch element: no search for
    the distinct masses, the same bits).
    """
    logn_B = as_dtype(as_dtype(n_B, torch.float32).clamp(min=1).log(), q_BRHD.dtype)
    if len(logn_B) == 1:
        base_BF = layer.base_mlp(logn_B.view(1, 1))
    else:
        logn_U, index_B = logn_B.unique(return_inverse=True)
        base_BF = torch.cat([layer.base_mlp(logn.view(1, 1)) for logn in logn_U])[index_B]
    base_B1HD = base_BF.view(-1, 1, layer.num_heads, layer.head_dim)
    return q_BRHD * (base_B1HD * (1 + torch.tanh(layer.query_mlp(q_BRHD))))


class OICLBlockV3(OBlock):
    """tabpfn_v3 `ICLTransformerBlock` with OAttention / OFFN / ONorm (see `OBlock`).

    attention: OAttention on the block's projections (GQA and test-row KV heads as stock),
    softmax scaling by the keys' presence mass; ffn: `x + p * mlp(layernorm_mlp(x))`;
    norm: both pre-norms as ONorm (an RMSNorm, which already maps 0 to 0, is left as it is).
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {
        "icl_attention": (
            "q_projection",
            "k_projection",
            "v_projection",
            "out_projection",
            "head_dim",
            "num_kv_heads_test",
        ),
        "icl_attention.softmax_scaling_layer": ("base_mlp", "query_mlp", "num_heads", "head_dim"),
        "layernorm": (),
        "layernorm_mlp": (),
        "mlp": (),
    }
    part_modules: ClassVar[dict[str, tuple[str, ...]]] = {
        "attention": ("icl_attention",),
        "ffn": ("mlp",),
        "norm": ("layernorm", "layernorm_mlp"),
    }

    def _forward_batch(
        self, x_container: list[torch.Tensor], single_eval_pos: int, save_peak_memory_factor: int | None
    ) -> torch.Tensor:
        """Pre-norm: each residual branch's norm and O part read the same carrier, whose presence
        is computed once per branch (only if a patched part reads it); the FFN branch in tabpfn's
        memory-saving chunks of the tokens when `save_peak_memory_factor` is set."""
        x_BRE = x_container.pop()
        base = self.base_layer
        N = single_eval_pos
        p_BR = self._presence(x_BRE, N) if self.parts & {"attention", "norm"} else None
        h_BRE = self._norm(base.layernorm, x_BRE, N, p_BR)
        if "attention" in self.parts:
            x_BRE = x_BRE + self._o_attention(h_BRE, p_BR, N)
        else:
            x_BRE = x_BRE + base.icl_attention(h_BRE, single_eval_pos=N)[0]
        del h_BRE
        p_BR = self._presence(x_BRE, N) if self.parts & {"ffn", "norm"} else None
        return per_token_in_chunks(partial(self._ffn_branch, single_eval_pos=N), save_peak_memory_factor, x_BRE, p_BR)

    def _ffn_branch(self, x_tE: torch.Tensor, p_t: torch.Tensor | None = None, *, single_eval_pos: int) -> torch.Tensor:
        """`x + ffn(layernorm_mlp(x))` of tokens `x_tE` (any leading axes) with their presences
        `p_t` (None when neither the FFN nor the norm part is patched), each part O where patched."""
        base = self.base_layer
        norm = partial(self._norm, base.layernorm_mlp, single_eval_pos=single_eval_pos, p_BRx=p_t)
        if "ffn" in self.parts:
            return o_ffn(x_tE, p_t, base.mlp, norm)
        return x_tE + base.mlp(norm(x_tE))

    @property
    def qk_norm(self) -> bool:
        """Whether the attention normalises queries and keys per head (`q_norm`, `k_norm` in `required`)."""
        return "q_norm" in self.required["icl_attention"]

    def _scale_queries(self, p_BR: torch.Tensor, single_eval_pos: int) -> Callable[[torch.Tensor], torch.Tensor]:
        """The softmax scaling of the queries by the context rows' presence mass."""
        layer = self.base_layer.icl_attention.softmax_scaling_layer
        return partial(scale_queries, layer, n_B=p_BR[:, :single_eval_pos].sum(1, dtype=torch.float64))

    def _o_attention(self, h_BRE: torch.Tensor, p_BR: torch.Tensor, single_eval_pos: int) -> torch.Tensor:
        attention = self.base_layer.icl_attention
        return o_in_context_attention(
            attention,
            h_BRE,
            p_BR,
            single_eval_pos,
            test_kv_heads=attention.num_kv_heads_test,
            settings=self.attention,
            scale_queries=self._scale_queries(p_BR, single_eval_pos),
            qk_norm=self.qk_norm,
        )

    def probe_attention(self, record: AttentionRecord) -> list[RemovableHandle]:
        """Pre-norm: the carrier `x` enters `layernorm`, whose output the attention projects."""
        base = self.base_layer
        attention = base.icl_attention
        context: dict[str, int] = {}

        def block_hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            context["N"] = int(args[1] if len(args) > 1 else kwargs["single_eval_pos"])

        def norm_hook(module: nn.Module, args: tuple, h_BRE: torch.Tensor) -> None:
            x_BRE, N = args[0], context["N"]
            p_BR = self._presence(x_BRE, N)
            q_BRHD, k_BNGD, _ = in_context_qkv(attention, h_BRE, N, self._scale_queries(p_BR, N), self.qk_norm)
            record(q_BRHD, k_BNGD, p_BR, N, attention.num_kv_heads_test)

        return [
            base.register_forward_pre_hook(block_hook, with_kwargs=True),
            base.layernorm.register_forward_hook(norm_hook),
        ]


# ---------------------------------------------------------------------------------------------
# Input stage with absence declared: presence-weighted statistics, rank-based grouping.
#
# The stock stage (`TabPFNV3._preprocess_raw`, `_group_features`, `_prepare_y`) computes column
# means and standard deviations over the train rows and groups each column with the columns 2^i
# places to its right (circularly). Here a cell is present when its row and its column are
# (`p_BR`, `p_BC`, structural: 1 present, 0 absent), and
# - every statistic over train rows counts present cells only (OStandardize's zero mass, with the
#   host's own estimator: unbiased std, `std + eps`, constant column -> std 1, clip at +-100);
# - sums run in row order (`ordered_sum`), so absent rows interleaved anywhere leave every partial
#   sum, and hence every statistic, bitwise unchanged;
# - grouping counts places among the present columns, so an absent column shifts no group;
# - absent cells come out exactly 0, whatever they held.
# With everything present the stage computes what the stock one does (up to summation order).


CLIP = 100.0
"""The host scaler's clip on standardised values."""


def ordered_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum of `x` along `dim` in index order (a sequential scan on the CPU); `dim` is removed.

    Inserting exact zeros anywhere along `dim` leaves the result bitwise unchanged, which a
    vectorised `sum` (whose lane split moves with the length) does not promise.
    """
    return x.cumsum(dim).select(dim, -1)


def present_cells(p_BR: torch.Tensor, p_BC: torch.Tensor) -> torch.Tensor:
    """(B, R, C) presence of the cells: row presence times column presence."""
    return p_BR[:, :, None] * p_BC[:, None, :]


def o_standardised_cells(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Imputed and standardised cells (B, R, C) and the NaN/inf indicators (B, R, C).

    `o_imputed_cells`, then `o_standardised`. Absent cells: 0 in both outputs.
    """
    imputed_BRC, indicator_BRC = o_imputed_cells(x_BRC, p_BRC, num_train)
    return o_standardised(imputed_BRC, p_BRC, num_train), indicator_BRC


def o_imputed_cells(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Imputed cells (B, R, C) and the NaN/inf indicators (B, R, C).

    Indicators as the host computes them (-2 NaN, 2 +inf, 4 -inf). A non-finite present cell is
    imputed with the mean of its column's finite present train cells (0 if none). Absent cells:
    0 in both outputs, whatever they held.
    """
    present_BRC = p_BRC > 0
    x_BRC = torch.where(present_BRC, x_BRC, 0)
    indicator_BRC = nan_and_inf_indicator(x_BRC)
    finite_BRC = torch.isfinite(x_BRC)
    mean_BC = _mean(x_BRC[:, :num_train], present_BRC[:, :num_train] & finite_BRC[:, :num_train])
    return torch.where(finite_BRC, x_BRC, mean_BC[:, None, :]), indicator_BRC  # absent cells: 0, indicator 0


def o_standardised(x_BRC: torch.Tensor, p_BRC: torch.Tensor, num_train: int) -> torch.Tensor:
    """Finite cells (B, R, C) standardised with the mean and unbiased std of their column's present
    train cells, as the host's scaler (`std + eps`, constant column -> std 1, clip at +-100). Absent
    cells: 0."""
    present_BRC = p_BRC > 0
    train_BNC = present_BRC[:, :num_train]
    mean_BC = _mean(x_BRC[:, :num_train], train_BNC)
    count_BC = ordered_sum(train_BNC.to(x_BRC.dtype), 1)
    centred_BNC = torch.where(train_BNC, x_BRC[:, :num_train] - mean_BC[:, None, :], 0)
    std_BC = (ordered_sum(centred_BNC.square(), 1) / (count_BC - 1).clamp(min=1)).sqrt()
    std_BC = torch.where((std_BC == 0) | (count_BC <= 1), 1, std_BC)
    scaled_BRC = (x_BRC - mean_BC[:, None, :]) / (std_BC[:, None, :] + torch.finfo(std_BC.dtype).eps)
    return torch.where(present_BRC, scaled_BRC.clip(-CLIP, CLIP), 0)


def _mean(x_BNC: torch.Tensor, keep_BNC: torch.Tensor) -> torch.Tensor:
    """(B, C) mean over the kept rows of each column (0 for a column with none kept)."""
    total_BC = ordered_sum(torch.where(keep_BNC, x_BNC, 0), 1)
    return total_BC / ordered_sum(keep_BNC.to(x_BNC.dtype), 1).clamp(min=1)


def o_grouped_cells(cells_BRC: torch.Tensor, p_BC: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B, R, C, G): each column with the present columns 2^i places to its right among the
    present ones (i < G), circularly; the stock `torch.roll` grouping when every column is present.

    Entries of absent columns are arbitrary (their cells are gated to 0 by the embedding).
    """
    return gathered_groups(cells_BRC, o_column_groups(p_BC, group_size))


def o_column_groups(p_BC: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B, C, G) column indices: column c's group is the present columns 2^i places to its right
    among the present ones (i < G), circularly (`o_grouped_cells`). A present column's group
    depends on nothing but which columns are present; an absent column's entries are arbitrary."""
    present_BC = p_BC > 0
    count_B1 = present_BC.sum(1, keepdim=True).clamp(min=1)
    rank_BC = (present_BC.cumsum(1) - 1).clamp(min=0)
    order_BC = torch.argsort((~present_BC).to(torch.uint8), dim=1, stable=True)
    return torch.stack([order_BC.gather(1, (rank_BC + 2**i) % count_B1) for i in range(group_size)], dim=-1)


def gathered_groups(cells_BRC: torch.Tensor, groups_BUG: torch.Tensor) -> torch.Tensor:
    """(B, R, U, G): the cells of the columns `groups_BUG` (B, U, G) names, per row."""
    B, R, _ = cells_BRC.shape
    _, U, G = groups_BUG.shape
    index_BRX = groups_BUG.reshape(B, 1, U * G).expand(B, R, U * G)
    return cells_BRC.gather(2, index_BRX).view(B, R, U, G)


def o_targets(y: torch.Tensor, p_BN: torch.Tensor) -> torch.Tensor:
    """Train targets (B, N) from tabpfn's `y` ((N,) shared by the batch, or (N, B)).

    A non-finite target of a present row is imputed with the mean of the finite present
    targets, as the host imputes over all train rows; absent rows' targets become 0.
    """
    B, N = p_BN.shape
    y_BN = y.reshape(N, -1).transpose(0, 1).expand(B, N)
    keep_BN = (p_BN > 0) & torch.isfinite(y_BN)
    mean_B = _mean(y_BN[:, :, None], keep_BN[:, :, None])[:, 0]
    y_BN = torch.where(torch.isfinite(y_BN), y_BN, mean_B[:, None])
    return torch.where(p_BN > 0, y_BN, 0)


# ---------------------------------------------------------------------------------------------
# Column stage with OAttention: the feature distribution embedder and the column aggregator on
# the host's own submodules, with structural cell presence.
#
# Stock dataflow (`TabPFNV3._process_row_chunk`): per column, an induced self-attention
# (`InducedSelfAttentionBlock`: inducing points attend to the column's train cells, then every
# cell attends to the inducing points); per row, a transformer over [CLS tokens, cells] with RoPE
# over the token index, whose last block reads the CLS tokens out (CLS queries, all tokens as
# keys). Here every attention is OAttention weighted by the tokens' presence (a cell: its row's
# times its column's; a CLS token: its row's; an inducing point: 1), the FFNs are OFFN, the
# softmax scaling counts the keys' presence mass, CLS tokens are injected with OInject, and RoPE
# positions count present tokens only, so an absent column moves no position. The norms are
# RMSNorms (0 -> 0) and every projection is bias-free, so an absent token stays exactly 0.
# With `qk_norm` (tabpfn_v3_5) every attention also normalises its queries and keys per head with
# the host's `q_norm` / `k_norm` (RMSNorms: a zero query or key stays 0), as the host does: after
# the projections in the distribution embedder, after RoPE in the aggregator.


def o_distribution_embedder(
    embedder: nn.Module,
    x_BRCE: torch.Tensor,
    p_BRC: torch.Tensor,
    num_train: int,
    attention: AttentionSettings,
    qk_norm: bool = False,
    save_peak_memory_factor: int | None = None,
    inducing_hidden: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """`FeatureDistributionEmbedder` on cells (B, R, C, E) with presence (B, R, C); same shape.

    The inducing points attend to the first `num_train` rows (the train cells), unless
    `inducing_hidden` (`o_inducing_hidden` of the train cells) gives their result: then any rows
    may be passed (tabpfn's row chunks) and `num_train` is not read.
    `attention`: the OAttention settings (`AttentionSettings`); `qk_norm`: the host normalises
    queries and keys per head (see the column stage's comment above); `save_peak_memory_factor`: each layer
    runs in that many chunks of the B * C columns, as tabpfn's memory saving runs it
    (`retrofit.adapters.chunks`; a column's result depends on that column alone), writing each
    chunk back in place: then `x_BRCE` may be overwritten (pass one nobody reads again).
    """
    B, R, C, E = x_BRCE.shape
    x_bRE = x_BRCE.transpose(1, 2).reshape(B * C, R, E)
    p_bR = p_BRC.transpose(1, 2).reshape(B * C, R)
    for i, layer in enumerate(embedder.layers):
        induced = partial(_o_induced_block, layer, num_train=num_train, attention=attention, qk_norm=qk_norm)
        hidden = () if inducing_hidden is None else (inducing_hidden[i],)
        x_bRE = replace_in_chunks(induced, save_peak_memory_factor, x_bRE, p_bR, *hidden)
    return x_bRE.view(B, C, R, E).transpose(1, 2)


def o_inducing_hidden(
    embedder: nn.Module, x_BNCE: torch.Tensor, p_BNC: torch.Tensor, attention: AttentionSettings, qk_norm: bool = False
) -> list[torch.Tensor]:
    """The inducing points' hidden states (B * C, I, E) after they attend to the train cells, one
    per layer of the `FeatureDistributionEmbedder`, from the train cells (B, N, C, E) with presence
    (B, N, C): what `o_distribution_embedder` computes from the train rows it is given, for calls on
    other rows (tabpfn's row chunks). Columns folded batch-major, as `o_distribution_embedder` folds
    them (column chunks of the same B tables concatenate along C)."""
    B, N, C, E = x_BNCE.shape
    x_bNE = x_BNCE.transpose(1, 2).reshape(B * C, N, E)
    p_bN = p_BNC.transpose(1, 2).reshape(B * C, N)
    hidden_L = []
    for i, layer in enumerate(embedder.layers):
        hidden_L.append(_o_inducing(layer, x_bNE, p_bN, attention, qk_norm))
        if i + 1 < len(embedder.layers):
            x_bNE = _o_cross_block(
                layer.cross_attn_block2, x_bNE, hidden_L[-1], p_bN, _all_present(p_bN, hidden_L[-1]), attention, qk_norm
            )
    return hidden_L


def _o_induced_block(
    layer: nn.Module,
    x_bRE: torch.Tensor,
    p_bR: torch.Tensor,
    hidden_bIE: torch.Tensor | None = None,
    *,
    num_train: int,
    attention: AttentionSettings,
    qk_norm: bool,
) -> torch.Tensor:
    """tabpfn_v3 `InducedSelfAttentionBlock` on columns (b, R, E): the inducing points attend to
    the column's first `num_train` (train) cells, unless their result `hidden_bIE` is given, then
    every cell attends to the inducing points."""
    if hidden_bIE is None:
        hidden_bIE = _o_inducing(layer, x_bRE[:, :num_train], p_bR[:, :num_train], attention, qk_norm)
    return _o_cross_block(
        layer.cross_attn_block2, x_bRE, hidden_bIE, p_bR, _all_present(p_bR, hidden_bIE), attention, qk_norm
    )


def _o_inducing(
    layer: nn.Module, x_bNE: torch.Tensor, p_bN: torch.Tensor, attention: AttentionSettings, qk_norm: bool
) -> torch.Tensor:
    """The inducing points (b, I, E) of `layer` after they attend to the train cells `x_bNE`."""
    inducing_bIE = layer.inducing_vectors.expand(x_bNE.shape[0], -1, -1)
    return _o_cross_block(
        layer.cross_attn_block1, inducing_bIE, x_bNE, _all_present(p_bN, inducing_bIE), p_bN, attention, qk_norm
    )


def _all_present(p_bX: torch.Tensor, x_bIE: torch.Tensor) -> torch.Tensor:
    """Presence 1 (in `p_bX`'s dtype) for every token of `x_bIE`: the inducing points are always present."""
    return p_bX.new_ones(x_bIE.shape[:2])


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


# ---------------------------------------------------------------------------------------------
# The whole model, O-closed.


ROW_CHUNKING = ("inference_chunk_cells", "inference_col_chunk_size")
"""The host attributes that size tabpfn's chunked inference of the stages before the in-context
blocks, which the closed model reads to run in the same chunks (`OClosedTabPFNV3.row_chunk_size`)."""


class OClosedTabPFNV3(OClosedModel):
    """A tabpfn_v3 regression model O-closed from input to readout (see the module docstring).

    `attention`: the OAttention settings of the column stage (the in-context blocks carry their
    own, from the same variant). A subclass for a sibling architecture says what differs by data
    (`required`, `closed_stages`, `qk_norm`, `task`) and by the hooks `cell_channels` (the per-cell
    inputs of the embedding) and `head` (the readout's projection of a test carrier).
    """

    qk_norm: ClassVar[bool] = False
    """Whether the column stage's attentions normalise queries and keys per head (`q_norm`, `k_norm`)."""

    task: ClassVar[dict[str, str]] = {}
    """Keyword arguments the host's label embeddings take to embed regression targets."""

    required: ClassVar[tuple[str, ...]] = (
        "x_embed",
        "col_y_encoder",
        "feature_distribution_embedder",
        "column_aggregator",
        "icl_y_encoder",
        "icl_blocks",
        "output_norm",
        "output_projection",
        "feature_group_size",
        "use_nan_indicators",
    )

    closed_stages: ClassVar[tuple[str, ...]] = (
        "x_embed",
        "col_y_encoder",
        "feature_distribution_embedder",
        "column_aggregator",
        "icl_y_encoder",
        "output_norm",
        "output_projection",
    )

    def __init__(self, base_layer: nn.Module, *, attention: AttentionSettings):
        super().__init__(base_layer)
        missing = [name for name in (*self.required, *ROW_CHUNKING) if not hasattr(base_layer, name)]
        if missing:
            raise RetrofitError(
                f"{type(self).__name__} cannot wrap {type(base_layer).__name__}: it lacks {missing}; this tabpfn "
                "version's layout differs from the one the closure reimplements."
            )
        if getattr(base_layer, "task_type", "regression") != "regression":  # a multitask host has none
            raise RetrofitError(
                f"o_closed supports regression hosts only (this one is {getattr(base_layer, 'task_type', None)!r}); "
                "the many-class decoder mixes train rows outside the closure."
            )
        self.attention = attention

    def forward(
        self,
        x: torch.Tensor | dict[str, torch.Tensor],
        y: torch.Tensor | dict[str, torch.Tensor],
        *,
        only_return_standard_out: bool = True,
        categorical_inds: list[list[int]] | None = None,
        performance_options: Any = None,
        task_type: str | None = None,
        kv_cache: Any = None,
        return_kv_cache: bool = False,
        x_is_test_only: bool = False,
        row_presence: torch.Tensor | None = None,
        column_presence: torch.Tensor | None = None,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The host's forward with absence: logits (T, B, buckets) of the test rows.

        `x` (R, B, C) raw (preprocessed) cells, `y` (N,) or (N, B) train targets, `row_presence`
        (B, R), `column_presence` (B, C): 1 present, 0 absent (None: all present). An absent test
        row gets logits exactly 0. `categorical_inds` is accepted and unused, as by the host;
        `task_type` (a multitask host's head) must be regression when given.
        """
        if kv_cache is not None or return_kv_cache or x_is_test_only:
            raise RuntimeError(KV_CACHE_REFUSAL)
        if task_type not in (None, "regression"):
            raise RetrofitError(f"o_closed runs regression heads only, got task_type={task_type!r}")
        x_RBC = x["main"] if isinstance(x, dict) else x
        y = y["main"] if isinstance(y, dict) else y
        y = y.squeeze(-1) if y.dim() == 3 else y
        R, B, C = x_RBC.shape
        N = y.shape[0]
        if not 0 < N < R:
            raise RetrofitError(f"o_closed needs 1..{R - 1} train rows before the test rows; got {N} train of {R} rows")
        p_BR = _structural(row_presence, (B, R), "row_presence", x_RBC)
        p_BC = _structural(column_presence, (B, C), "column_presence", x_RBC)
        y_BN = o_targets(y, p_BR[:, :N])
        factor = getattr(performance_options, "save_peak_memory_factor", None)
        rows = self.row_chunk_size(performance_options, B, C)
        if rows >= R:
            x_BRCE = self.column_tokens(x_RBC, y_BN, p_BR, p_BC, save_peak_memory_factor=factor)
            return self.forward_tokens(x_BRCE, y_BN, p_BR, p_BC, performance_options, only_return_standard_out)
        x_BRD = self._aggregated_in_row_chunks(x_RBC, y_BN, p_BR, p_BC, rows, factor)
        return self._in_context_and_readout(x_BRD, y_BN, p_BR, factor, only_return_standard_out)

    def row_chunk_size(self, performance_options: Any, B: int, C: int) -> int:
        """The rows per chunk of the stages before the in-context blocks, as tabpfn chunks them
        (`_stages_0_to_2`): with `performance_options.use_chunkwise_inference` (tabpfn_v3's default
        in inference), `inference_chunk_cells` cells of the B tables' C columns per chunk, at least
        one row; otherwise every row at once (a size no table reaches)."""
        if not getattr(performance_options, "use_chunkwise_inference", False) or self.base_layer.training:
            return torch.iinfo(torch.int64).max
        return max(1, self.base_layer.inference_chunk_cells // (B * C))

    def column_tokens(
        self,
        x_RBC: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        groups_BUG: torch.Tensor | None = None,
        *,
        save_peak_memory_factor: int | None = None,
    ) -> torch.Tensor:
        """The per-column stage, O-closed: tokens (B, R, U, E) before the column aggregator.

        The cells are standardised over their column's present train rows, token u groups the
        cells of the columns `groups_BUG[:, u]` (default: `o_column_groups(p_BC)`, U = C, each
        column with the present columns 2^i places to its right), is embedded with the train
        labels injected, then runs the distribution embedder, which attends within the token's
        rows only. So a token depends on nothing but its group's columns' cells, the row presence
        and `y_BN` (the train targets, `o_targets`): given its group it is the same for every
        column presence. Explicit `groups_BUG` (all of whose columns must be present) give
        tokens that are all present; by default an absent column's token is 0.
        `save_peak_memory_factor`: the distribution embedder in tabpfn's memory-saving chunks."""
        N = y_BN.shape[1]
        grouped_BRUG, p_BRU = self._grouped_cells(x_RBC, p_BR, p_BC, N, groups_BUG)
        x_BRUE = self._embedded(grouped_BRUG, p_BRU, self._column_labels(y_BN))
        embedder = self.base_layer.feature_distribution_embedder
        return o_distribution_embedder(
            embedder, x_BRUE, p_BRU, N, self.attention, self.qk_norm, save_peak_memory_factor
        )

    def _grouped_cells(
        self,
        x_RBC: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        num_train: int,
        groups_BUG: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The cell embedder's input (B, R, U, channels x G), each token's cells grouped as
        `column_tokens` says, and the tokens' presence (B, R, U)."""
        channels = self.cell_channels(x_RBC.transpose(0, 1), p_BR, p_BC, num_train)
        if groups_BUG is None:
            groups_BUG, p_BRU = o_column_groups(p_BC, self.base_layer.feature_group_size), present_cells(p_BR, p_BC)
        else:
            p_BRU = p_BR[:, :, None].expand(*p_BR.shape, groups_BUG.shape[1])
        return torch.cat([gathered_groups(cells_BRC, groups_BUG) for cells_BRC in channels], -1), p_BRU

    def _column_labels(self, y_BN: torch.Tensor) -> torch.Tensor:
        """The train targets' column label embedding (B, N, 1, E), added to every token of a train row."""
        return embed_col_y(self.base_layer, y_BN, **self.task)[:, :, None, :]

    def _embedded(self, grouped_BrUG: torch.Tensor, p_BrU: torch.Tensor, label_BnUE: torch.Tensor) -> torch.Tensor:
        """Tokens (B, r, U, E) of grouped cells (B, r, U, channels x G) with presence (B, r, U): `x_embed`
        and, on the first n rows (the train rows among them), the column labels `label_BnUE`
        (U or 1 tokens), each injected with OInject."""
        n = label_BnUE.shape[1]
        x_BrUE = o_inject(self.base_layer.x_embed(grouped_BrUG), p_BrU)
        if n == 0:
            return x_BrUE
        return torch.cat([x_BrUE[:, :n] + o_inject(label_BnUE, p_BrU[:, :n]), x_BrUE[:, n:]], dim=1)

    def _aggregated_in_row_chunks(
        self,
        x_RBC: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        rows: int,
        save_peak_memory_factor: int | None,
    ) -> torch.Tensor:
        """`aggregated(column_tokens(...))` (B, R, CLS * E) in chunks of `rows` rows, as tabpfn's
        chunked inference runs its stages before the in-context blocks: first the distribution
        embedder's inducing points on the train rows, in chunks of `inference_col_chunk_size`
        columns (`o_inducing_hidden`), then per chunk of rows the cell embedding, the embedder's
        second half and the column aggregator, whose results depend on the row alone. Only the
        chunk's tokens are held; the values agree with unchunked up to the rounding of smaller
        batches. After running out of GPU memory either pass starts again with half its chunk,
        stored on the host as tabpfn stores it (`retrofit.adapters.chunks.halving_after_oom`)."""
        N = y_BN.shape[1]
        B, R, C = p_BR.shape[0], p_BR.shape[1], p_BC.shape[1]
        base = self.base_layer
        embedder = base.feature_distribution_embedder
        grouped_BRUG, p_BRU = self._grouped_cells(x_RBC, p_BR, p_BC, N)
        label_BN1E = self._column_labels(y_BN)

        def inducing_hidden(step: int) -> list[torch.Tensor]:
            parts = []
            for start in range(0, grouped_BRUG.shape[2], step):
                columns = slice(start, start + step)
                p_BNU = p_BRU[:, :N, columns]
                x_BNUE = self._embedded(grouped_BRUG[:, :N, columns], p_BNU, label_BN1E)
                parts.append(o_inducing_hidden(embedder, x_BNUE, p_BNU, self.attention, self.qk_norm))
            return [
                torch.cat([h.view(B, -1, *h.shape[1:]) for h in layer], 1).flatten(0, 1)
                for layer in zip(*parts, strict=True)
            ]

        def aggregated_rows(rows: int) -> torch.Tensor:
            parts = []
            for start in range(0, R, rows):
                chunk = slice(start, start + rows)
                x_BrUE = self._embedded(grouped_BRUG[:, chunk], p_BRU[:, chunk], label_BN1E[:, chunk])
                x_BrUE = o_distribution_embedder(
                    embedder, x_BrUE, p_BRU[:, chunk], 0, self.attention, self.qk_norm, None, hidden_L
                )
                parts.append(self.aggregated(x_BrUE, p_BR[:, chunk], p_BC, save_peak_memory_factor))
            return torch.cat(parts, 1)

        columns = base.inference_col_chunk_size or grouped_BRUG.shape[2]
        hidden_L = halving_after_oom(inducing_hidden, columns, partial(setattr, base, "inference_col_chunk_size"))
        return halving_after_oom(
            aggregated_rows, rows, lambda halved: setattr(base, "inference_chunk_cells", halved * B * C)
        )

    def cell_channels(
        self, x_BRC: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, num_train: int
    ) -> list[torch.Tensor]:
        """The per-cell inputs (each (B, R, C)) whose groups the cell embedder reads, in its order:
        the standardised cells and, if the host uses them, the NaN/inf indicators
        (`o_standardised_cells`); absent cells 0."""
        cells_BRC, indicator_BRC = o_standardised_cells(x_BRC, present_cells(p_BR, p_BC), num_train)
        return [cells_BRC, indicator_BRC] if self.base_layer.use_nan_indicators else [cells_BRC]

    def column_groups(self, p_BC: torch.Tensor) -> torch.Tensor:
        """(B, C, G) the columns whose cells form each column's token under column presence `p_BC`
        (`o_column_groups`; an absent column's entries are arbitrary)."""
        return o_column_groups(p_BC, self.base_layer.feature_group_size)

    def forward_tokens(
        self,
        x_BRCE: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        p_BC: torch.Tensor,
        performance_options: Any = None,
        only_return_standard_out: bool = True,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The rest of `forward` from the column tokens (`column_tokens`, U = C): the column
        aggregation, the in-context label embedding on the train rows, the in-context blocks and
        the readout; logits (T, B, buckets)."""
        factor = getattr(performance_options, "save_peak_memory_factor", None)
        x_BRD = self.aggregated(x_BRCE, p_BR, p_BC, factor)
        return self._in_context_and_readout(x_BRD, y_BN, p_BR, factor, only_return_standard_out)

    def aggregated(
        self, x_BRCE: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, save_peak_memory_factor: int | None
    ) -> torch.Tensor:
        """The column aggregator's readout of the column tokens (B, R, C, E), flattened (B, R, CLS * E)."""
        aggregator = self.base_layer.column_aggregator
        return o_column_aggregator(
            aggregator, x_BRCE, p_BR, p_BC, self.attention, self.qk_norm, save_peak_memory_factor
        ).flatten(-2)

    def _in_context_and_readout(
        self,
        x_BRD: torch.Tensor,
        y_BN: torch.Tensor,
        p_BR: torch.Tensor,
        save_peak_memory_factor: int | None,
        only_return_standard_out: bool,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The in-context label embedding on the train rows, the in-context blocks and the readout."""
        base = self.base_layer
        N = y_BN.shape[1]
        label_BND = o_inject(embed_icl_y(base, y_BN, **self.task), p_BR[:, :N])
        x_BRD = torch.cat([x_BRD[:, :N] + label_BND, x_BRD[:, N:]], dim=1)
        for block in base.icl_blocks:
            x_BRD, _ = block(x_BRD, N, save_peak_memory_factor)
        return self._readout(base.output_norm(x_BRD), p_BR, N, only_return_standard_out)

    def _readout(
        self, x_BRD: torch.Tensor, p_BR: torch.Tensor, N: int, only_return_standard_out: bool
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The test rows' logits (T, B, buckets) from the normed carriers, absent test rows exactly 0;
        with `only_return_standard_out=False` also the test and train embeddings, as the host returns."""
        base = self.base_layer
        test_TBD = x_BRD[:, N:].transpose(0, 1).contiguous()  # a strided matmul rounds by batch layout
        p_TB = p_BR[:, N:].transpose(0, 1)
        out_TBO = self._compact_head(test_TBD, p_TB) if self.attention.compact else o_inject(self.head(test_TBD), p_TB)
        if nan_safe_output(base):
            out_TBO = torch.nan_to_num(out_TBO, nan=0.0)
        if only_return_standard_out:
            return out_TBO
        return {"standard": out_TBO, "test_embeddings": test_TBD, "train_embeddings": x_BRD[:, :N].transpose(0, 1)}

    def _compact_head(self, test_TBD: torch.Tensor, p_TB: torch.Tensor) -> torch.Tensor:
        """`head` run per batch element on its present test rows alone, absent rows exactly 0: a CPU
        matmul may round a row differently with another number of rows beside it, so with
        `compact` an element's logits do not depend on its batch mates or its padding."""
        T, B, _ = test_TBD.shape
        present = [p_TB[:, b] > 0 for b in range(B)]
        logits = [self.head(test_TBD[rows_T, b]) for b, rows_T in enumerate(present)]
        out_TBO = test_TBD.new_zeros(T, B, logits[0].shape[-1])
        for b, (rows_T, logits_tO) in enumerate(zip(present, logits, strict=True)):
            out_TBO[rows_T, b] = logits_tO
        return out_TBO

    def head(self, test_TBD: torch.Tensor) -> torch.Tensor:
        """The regression logits (T, B, buckets) of normed test carriers: the host's `output_projection`
        (its bias is gated by the caller)."""
        return self.base_layer.output_projection(test_TBD)

    @property
    def readout_modules(self) -> tuple[nn.Module, ...]:
        """The host modules a test carrier passes after the in-context blocks (`output_norm`, then `head`'s)."""
        return self.base_layer.output_norm, self.base_layer.output_projection


def _structural(p: torch.Tensor | None, shape: tuple[int, int], name: str, like: torch.Tensor) -> torch.Tensor:
    """The presence `p` (default: all present) in `like`'s dtype; RetrofitError unless shape
    `shape` with every entry 0 or 1."""
    if p is None:
        return like.new_ones(shape)
    p = torch.as_tensor(p, device=like.device)
    if tuple(p.shape) != shape or not bool(((p == 0) | (p == 1)).all()):
        raise RetrofitError(
            f"{name} must be a {shape} tensor of 0 (absent) and 1 (present), got shape {tuple(p.shape)}"
            f"{'' if tuple(p.shape) != shape else ' with other values'}; presence at the input is structural."
        )
    return p.to(like.dtype)


register_architecture(
    ArchitectureSpec(
        name="tabpfn_v3",
        module="tabpfn.architectures.tabpfn_v3",
        blocks="icl_blocks",
        block_class="ICLTransformerBlock",
        wrapper=OICLBlockV3,
        closed_wrapper=OClosedTabPFNV3,
        shared_stages="_stages_0_to_2",
    )
)
