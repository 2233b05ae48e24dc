"""`OClosedTabPFNV3p5`: a whole tabpfn_v3_5 regression model O-closed from the raw input to the
readout (the `o_closed` variant), on `OClosedTabPFNV3`'s dataflow.

tabpfn_v3_5's stages are tabpfn_v3's with four differences, each closed here:
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

from retrofit.adapters.tabpfn_v3_5_input import o_ecdf_ranks
from retrofit.adapters.tabpfn_v3_closed import OClosedTabPFNV3
from retrofit.adapters.tabpfn_v3_input import o_imputed_cells, o_standardised, present_cells


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
