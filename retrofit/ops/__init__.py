"""O-closed operators: presence, OAttention, zero-absorbing local maps, OStandardize, blocks.

Knows nothing of TabPFN. Every function states its contract (shapes, what is exact).
"""

from retrofit.ops.attention import (
    EPS_MODES,
    check_eps_mode,
    o_attention,
    o_attention_materialised,
    o_attention_query_sets,
    o_attention_reference,
)
from retrofit.ops.blocks import OAOnlyBlock, OTransformerBlock, StandardBlock
from retrofit.ops.closure import OFFN, OInject, ONorm, o_ffn, o_inject, o_linear, o_norm
from retrofit.ops.presence import presence
from retrofit.ops.standardize import OStandardize, o_standardize

__all__ = [
    "EPS_MODES",
    "OFFN",
    "OAOnlyBlock",
    "OInject",
    "ONorm",
    "OStandardize",
    "OTransformerBlock",
    "StandardBlock",
    "check_eps_mode",
    "o_attention",
    "o_attention_materialised",
    "o_attention_query_sets",
    "o_attention_reference",
    "o_ffn",
    "o_inject",
    "o_linear",
    "o_norm",
    "o_standardize",
    "presence",
]
