"""O wrapper for tabpfn_v3's in-context blocks (`ICLTransformerBlock`, pre-norm).

Stock block: `x += icl_attention(layernorm(x))`, then `x += mlp(layernorm_mlp(x))`, x (B, R, E).
Hidden carrier: `x` entering each residual branch (not `layernorm(x)`).
"""

from collections.abc import Callable
from functools import partial
from typing import ClassVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters.attention import in_context_qkv, o_in_context_attention
from retrofit.adapters.block import AttentionRecord, OBlock
from retrofit.adapters.chunks import per_token_in_chunks
from retrofit.ops import o_ffn
from retrofit.ops.presence import as_dtype


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
