"""The v2 family's adapters, registered as the architectures tabpfn_v2, tabpfn_v2_5 and
tabpfn_v2_6: the O wrapper of their blocks (`TabPFNBlock`, post-norm), and why the whole model
cannot be O-closed (`V2_REFUSAL`).

Stock block on cells x (B, R, C, E): `x = norm1(x + attention_between_features(x))`,
`x = norm2(x + attention_between_cells(x))` per column, `x = norm3(x + mlp(x))`.
The in-context attention is the between-cells one (rows of a column attend to the train rows;
test rows through the first key/value head only). Hidden carrier: each cell's `x` entering a
residual branch or norm (post-norm: the branch reads the carrier itself).
"""

from functools import partial
from typing import ClassVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters.block import AttentionRecord, OBlock
from retrofit.adapters.chunks import per_token_in_chunks
from retrofit.adapters.in_context_attention import in_context_qkv, o_in_context_attention
from retrofit.adapters.registry import ArchitectureSpec, register_architecture
from retrofit.errors import RetrofitError
from retrofit.ops import o_ffn

V2_REFUSAL = (
    "the tabpfn_v2 family cannot be O-closed at its input: its encoders standardise every feature over "
    "the train rows inside the encoder pipeline (an absent row would shift those statistics) and every "
    "block's attention between features mixes the columns of a row with a stock softmax (an absent column "
    "would dilute it); neither takes a presence. Use a tabpfn_v3 or tabpfn_v3_5 host for o_closed (tiny_v3, "
    "tiny_v3_5), or full_o (in-context stage only) on this one."
)


class OTabPFNBlockV2(OBlock):
    """v2-family `TabPFNBlock` with OAttention / OFFN / ONorm (see `OBlock`).

    attention: OAttention between cells, presence per cell; ffn: `x + p * mlp(x)`; norm: the
    three post-norms as ONorm. The within-row attention between features is left as stock: it
    never mixes rows, and on an all-null row it returns exactly 0 (bias-free values).
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {
        "per_sample_attention_between_features": (),
        "per_column_attention_between_cells": (
            "q_projection",
            "k_projection",
            "v_projection",
            "out_projection",
            "head_dim",
        ),
        "layernorm_mha1": (),
        "layernorm_mha2": (),
        "layernorm_mlp": (),
        "mlp": (),
    }
    part_modules: ClassVar[dict[str, tuple[str, ...]]] = {
        "attention": ("per_column_attention_between_cells",),
        "ffn": ("mlp",),
        "norm": ("layernorm_mha1", "layernorm_mha2", "layernorm_mlp"),
    }

    def _forward_batch(
        self, x_container: list[torch.Tensor], single_eval_pos: int, save_peak_memory_factor: int | None
    ) -> torch.Tensor:
        """In stock's layouts: the between-cells branch and its norm run column-major (B, C, R, E),
        contiguous, and the row-major carriers are released while they do (as stock does); the
        FFN in tabpfn's memory-saving chunks of the cells when `save_peak_memory_factor` is set."""
        x_BRCE = x_container.pop()
        base = self.base_layer
        N = single_eval_pos
        x_BRCE = x_BRCE + base.per_sample_attention_between_features(x_BRCE.flatten(0, 1)).view(x_BRCE.shape)
        x_BRCE = self._norm(base.layernorm_mha1, x_BRCE, N)
        x_BCRE = x_BRCE.transpose(1, 2).contiguous()
        del x_BRCE
        x_BCRE = x_BCRE + self._cell_attention(x_BCRE, N)
        x_BCRE = self._norm(base.layernorm_mha2, x_BCRE, N, rows_dim=2)
        x_BRCE = x_BCRE.transpose(1, 2).contiguous()
        del x_BCRE
        if "ffn" in self.parts:
            ffn = partial(o_ffn, ffn=base.mlp)
            x_BRCE = per_token_in_chunks(ffn, save_peak_memory_factor, x_BRCE, self._presence(x_BRCE, N))
        else:
            x_BRCE = per_token_in_chunks(lambda x_tE: x_tE + base.mlp(x_tE), save_peak_memory_factor, x_BRCE)
        return self._norm(base.layernorm_mlp, x_BRCE, N)

    def _cell_attention(self, x_BCRE: torch.Tensor, single_eval_pos: int) -> torch.Tensor:
        """The between-cells branch (B, C, R, E) of contiguous carriers (B, C, R, E): each column's
        rows attend to its train rows. Contiguous, as stock's layout is: a strided (B * C, R, E)
        view would run every projection as a batched matmul against a broadcast weight."""
        attention = self.base_layer.per_column_attention_between_cells
        B, C, R, E = x_BCRE.shape
        x_BcRE = x_BCRE.view(B * C, R, E)
        if "attention" in self.parts:
            p_BcR = self._presence(x_BCRE, single_eval_pos, rows_dim=2).view(B * C, R)
            out_BcRE = o_in_context_attention(
                attention,
                x_BcRE,
                p_BcR,
                single_eval_pos,
                test_kv_heads=1,
                settings=self.attention,
            )
        else:
            out_BcRE = attention(x_BcRE, single_eval_pos=single_eval_pos)[0]
        return out_BcRE.view(B, C, R, E)

    def probe_attention(self, record: AttentionRecord) -> list[RemovableHandle]:
        """Post-norm: the between-cells attention's input is the carrier itself."""
        base = self.base_layer
        attention = base.per_column_attention_between_cells
        context: dict[str, tuple[torch.Size, int]] = {}

        def block_hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            x = args[0]
            N = args[1] if len(args) > 1 else kwargs["single_eval_pos"]
            context["input"] = ((x[0] if isinstance(x, list) else x).shape, int(N))

        def attention_hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            h_BcRE, ((B, _, C, _), N) = args[0], context["input"]
            if h_BcRE.shape[0] != B * C:
                raise RetrofitError(
                    f"attention probe: the cell attention got {h_BcRE.shape[0]} columns, not all {B * C}: "
                    "memory-saving chunking splits tables; fit the regressor with memory_saving_mode=False"
                )
            R, E = h_BcRE.shape[1:]
            p_BcR = self._presence(h_BcRE.view(B, C, R, E), N, rows_dim=2).view(B * C, R)
            q_BcRHD, k_BcNGD, _ = in_context_qkv(attention, h_BcRE, N)
            record(q_BcRHD, k_BcNGD, p_BcR, N, 1)

        return [
            base.register_forward_pre_hook(block_hook, with_kwargs=True),
            attention.register_forward_pre_hook(attention_hook, with_kwargs=True),
        ]


for _name in ("tabpfn_v2", "tabpfn_v2_5", "tabpfn_v2_6"):
    register_architecture(
        ArchitectureSpec(
            name=_name,
            module=f"tabpfn.architectures.{_name}",
            blocks="blocks",
            block_class="TabPFNBlock",
            wrapper=OTabPFNBlockV2,
            closed_refusal=V2_REFUSAL,
        )
    )
