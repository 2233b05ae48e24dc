"""O wrapper for tabpfn_v3_5's in-context blocks, and why v3.5 has no whole-model closure.

The v3.5 `ICLTransformerBlock` is v3's (pre-norm, GQA with `num_kv_heads_test` key/value heads
for the test rows, softmax scaling of the queries, no RoPE in the in-context attention) plus a
per-head RMSNorm of the queries and keys (`icl_attention.q_norm`, `k_norm`), applied after the
projections and before the softmax scaling. The wrapper is v3's with those two norms read.
"""

from typing import ClassVar

from retrofit.adapters.tabpfn_v3 import OICLBlockV3

V3_5_REFUSAL = (
    "tabpfn_v3_5 cannot be O-closed at its input yet: its stages before the in-context blocks take no "
    "presence. The in-context ECDF feature of every cell ranks it against bucket edges and counts built "
    "from all train rows (an absent row would shift every rank; closing it means ranking among present "
    "rows only); the Fourier feature-group embedder `x_embed` and the label embeddings' LayerNorms "
    "(`col_y_layernorm`, `icl_y_layernorm`) have a bias and cos(0) = 1 features, so an absent cell becomes "
    "a non-zero carrier; the distribution embedder and the column aggregator (8 CLS tokens, RoPE over "
    "column positions, per-head q/k norms) attend over train rows and columns with a stock softmax; and "
    "the multitask heads' regression readout (`heads`) is not gated by row presence. Use full_o "
    "(in-context stage only) on this host, or a tabpfn_v3 host for o_closed."
)


class OICLBlockV3p5(OICLBlockV3):
    """tabpfn_v3_5 `ICLTransformerBlock` with OAttention / OFFN / ONorm (see `OICLBlockV3`).

    attention: as v3's, on queries and keys through the block's per-head `q_norm` / `k_norm`
    (RMSNorms: a null carrier's zero query and key stay 0).
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {
        **OICLBlockV3.required,
        "icl_attention": (*OICLBlockV3.required["icl_attention"], "q_norm", "k_norm"),
    }
