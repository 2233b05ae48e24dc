"""tabpfn_v3_5's adapters, registered as the `tabpfn_v3_5` architecture: tabpfn_v3's
(`retrofit.adapters.tabpfn_v3`) with what v3.5 adds read or closed here.

In-context block: the v3.5 `ICLTransformerBlock` is v3's (pre-norm, GQA with `num_kv_heads_test`
key/value heads for the test rows, softmax scaling of the queries, no RoPE in the in-context
attention) plus a per-head RMSNorm of the queries and keys (`icl_attention.q_norm`, `k_norm`),
applied after the projections and before the softmax scaling. The wrapper is v3's with those two
norms read.

Whole model (`OClosedTabPFNV3p5`, the `o_closed` variant, on `OClosedTabPFNV3`'s dataflow): the
stages are tabpfn_v3's with four differences, each closed here:
  input       a third per-cell channel, the in-context ECDF rank of the imputed cell among its
              column's train rows, ranked among the present train rows only (`o_ecdf_ranks`);
              the cell embedder `x_embed` (Fourier features of the values plus a linear map of
              the indicators and ECDF features, then a LayerNorm with a bias) is gated by the
              cell presence (OInject), as on v3;
  labels      both label embeddings end in a LayerNorm (`col_y_layernorm`, `icl_y_layernorm`),
              with biases: injected with OInject on the present train rows, as on v3;
  columns     every attention of the distribution embedder and the column aggregator normalises
              its queries and keys per head (`q_norm`, `k_norm`: RMSNorms, 0 -> 0) before the
              presence-mass softmax scaling / after the rank RoPE, as the host does;
  readout     the multitask heads' regression path, `heads.mlp_regression` (a residual pre-norm
              MLP, bias-free: 0 -> 0) and `heads.output_projection`, gated by row presence.
Absence, presence and the exactness contract are `OClosedTabPFNV3`'s: `forward(x, y, ...,
row_presence=p_BR, column_presence=p_BC)`, an absent row or column changes no other output
beyond rounding (bitwise with `compact`), an absent test row reads out exactly 0 logits.
"""

from typing import ClassVar

import torch
from torch import nn

from retrofit.adapters.registry import ArchitectureSpec, register_architecture
from retrofit.adapters.tabpfn_v3 import (
    OClosedTabPFNV3,
    OICLBlockV3,
    o_imputed_cells,
    o_standardised,
    present_cells,
)
from retrofit.tabpfn_internals import ecdf_context, in_context_ecdf


class OICLBlockV3p5(OICLBlockV3):
    """tabpfn_v3_5 `ICLTransformerBlock` with OAttention / OFFN / ONorm (see `OICLBlockV3`).

    attention: as v3's, on queries and keys through the block's per-head `q_norm` / `k_norm`
    (RMSNorms: a null carrier's zero query and key stay 0).
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {
        **OICLBlockV3.required,
        "icl_attention": (*OICLBlockV3.required["icl_attention"], "q_norm", "k_norm"),
    }


# The in-context ECDF feature with absence declared: ranks among the present train rows.
#
# The stock stage (`TabPFNV3p5._preprocess_raw`) ranks every imputed cell against bucket edges and
# counts built from its column's train rows (`_build_ecdf_context`: up to `ecdf_num_buckets` edges,
# exact midranks on the edges, linear between them) and divides by the train-row count. Here the
# edges and counts are built from the present train rows only, gathered in row order, so a table
# with absent rows (structural presence `p_BR`, 1 present, 0 absent) gets bitwise the ranks of the
# same table without them; a column's ranks depend on nothing but that column, so absent columns
# change no rank either. With everything present the ranks are the host's, bitwise.


def o_ecdf_ranks(
    x_BRC: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, num_train: int, num_buckets: int
) -> torch.Tensor:
    """(B, R, C) midrank ECDF in [0, 1] of every imputed cell `x_BRC` among its column's present
    train cells (the host's `ecdf_context` and `in_context_ecdf` on them).

    Batch elements with equal present train counts are ranked in one call on their present train
    rows gathered in order (no element padded to another's count). Absent cells, and every cell
    of an element without a present train row: 0.
    """
    C = x_BRC.shape[2]
    present_BN = p_BR[:, :num_train] > 0
    count_B = present_BN.sum(1)
    ecdf_BRC = torch.zeros_like(x_BRC)
    for count in count_B.unique().tolist():
        if count == 0:
            continue
        b_g = (count_B == count).nonzero()[:, 0]
        rows_gn = present_BN[b_g].nonzero()[:, 1].view(len(b_g), count)  # row-major: each element's rows in order
        train_gnC = x_BRC[b_g].gather(1, rows_gn[:, :, None].expand(-1, -1, C))
        ecdf_BRC[b_g] = in_context_ecdf(x_BRC[b_g], ecdf_context(train_gnC, count, num_buckets))
    present_BRC = (p_BR[:, :, None] > 0) & (p_BC[:, None, :] > 0)
    return torch.where(present_BRC, ecdf_BRC, 0)


class OClosedTabPFNV3p5(OClosedTabPFNV3):
    """A tabpfn_v3_5 regression model O-closed from input to readout (see the module docstring)."""

    qk_norm: ClassVar[bool] = True
    task: ClassVar[dict[str, str]] = {"task_type": "regression"}

    closed_stages: ClassVar[tuple[str, ...]] = (
        "x_embed",
        "col_y_encoder",
        "col_y_layernorm",
        "feature_distribution_embedder",
        "column_aggregator",
        "icl_y_encoder",
        "icl_y_layernorm",
        "output_norm",
        "heads",
    )

    required: ClassVar[tuple[str, ...]] = (*closed_stages, "icl_blocks", "feature_group_size", "ecdf_num_buckets")

    def cell_channels(
        self, x_BRC: torch.Tensor, p_BR: torch.Tensor, p_BC: torch.Tensor, num_train: int
    ) -> list[torch.Tensor]:
        """The standardised cells, the NaN/inf indicators and the ECDF ranks of the imputed cells
        among the present train rows, in `x_embed`'s order; absent cells 0."""
        p_BRC = present_cells(p_BR, p_BC)
        imputed_BRC, indicator_BRC = o_imputed_cells(x_BRC, p_BRC, num_train)
        ranks_BRC = o_ecdf_ranks(imputed_BRC, p_BR, p_BC, num_train, self.base_layer.ecdf_num_buckets)
        return [o_standardised(imputed_BRC, p_BRC, num_train), indicator_BRC, ranks_BRC]

    def head(self, test_TBD: torch.Tensor) -> torch.Tensor:
        """The regression logits (T, B, buckets): `heads.mlp_regression`, then `heads.output_projection`
        (its bias is gated by the caller)."""
        heads = self.base_layer.heads
        return heads.output_projection(heads.mlp_regression(test_TBD))

    @property
    def readout_modules(self) -> tuple[nn.Module, ...]:
        """`output_norm`, `heads.mlp_regression`, `heads.output_projection`."""
        heads = self.base_layer.heads
        return self.base_layer.output_norm, heads.mlp_regression, heads.output_projection


register_architecture(
    ArchitectureSpec(
        name="tabpfn_v3_5",
        module="tabpfn.architectures.tabpfn_v3_5",
        blocks="icl_blocks",
        block_class="ICLTransformerBlock",
        wrapper=OICLBlockV3p5,
        closed_wrapper=OClosedTabPFNV3p5,
        shared_stages="_stages_0_to_2",
    )
)
