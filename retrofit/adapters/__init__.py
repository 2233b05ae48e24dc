"""Adapters: where each tabpfn architecture keeps its in-context blocks, and the O wrappers.

Importing this package registers tabpfn_v3, tabpfn_v3_5, tabpfn_v2, tabpfn_v2_5, tabpfn_v2_6 and the
adapters o_attention, o_ffn, o_norm (see `specs`).
"""

from retrofit.adapters import specs
from retrofit.adapters.attention import AttentionSettings
from retrofit.adapters.block import KV_CACHE_REFUSAL, OBlock
from retrofit.adapters.closure import OClosedModel, close_model
from retrofit.adapters.registry import (
    ADAPTERS,
    ARCHITECTURES,
    PARTS,
    AdapterSpec,
    ArchitectureSpec,
    adapter,
    architecture_of,
    in_context_blocks,
    register_adapter,
    register_architecture,
)
from retrofit.adapters.tau import TauRule

__all__ = [
    "ADAPTERS",
    "ARCHITECTURES",
    "KV_CACHE_REFUSAL",
    "PARTS",
    "AdapterSpec",
    "ArchitectureSpec",
    "AttentionSettings",
    "OBlock",
    "OClosedModel",
    "TauRule",
    "adapter",
    "architecture_of",
    "close_model",
    "in_context_blocks",
    "register_adapter",
    "register_architecture",
    "specs",
]
