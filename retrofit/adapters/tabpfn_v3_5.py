"""O wrapper for tabpfn_v3_5's in-context blocks (the whole-model closure: `tabpfn_v3_5_closed`).

The v3.5 `ICLTransformerBlock` is v3's (pre-norm, GQA with `num_kv_heads_test` key/value heads
for the test rows, softmax scaling of the queries, no RoPE in the in-context attention) plus a
per-head RMSNorm of the queries and keys (`icl_attention.q_norm`, `k_norm`), applied after the
projections and before the softmax scaling. The wrapper is v3's with those two norms read.
"""

from typing import ClassVar

from retrofit.adapters.tabpfn_v3 import OICLBlockV3


class OICLBlockV3p5(OICLBlockV3):
    """tabpfn_v3_5 `ICLTransformerBlock` with OAttention / OFFN / ONorm (see `OICLBlockV3`).

    attention: as v3's, on queries and keys through the block's per-head `q_norm` / `k_norm`
    (RMSNorms: a null carrier's zero query and key stay 0).
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {
        **OICLBlockV3.required,
        "icl_attention": (*OICLBlockV3.required["icl_attention"], "q_norm", "k_norm"),
    }
