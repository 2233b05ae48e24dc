"""Adapters: where each tabpfn architecture keeps its in-context blocks, and the O wrappers.

One module per architecture (`tabpfn_v2` for the v2 family, `tabpfn_v3`, `tabpfn_v3_5`) holds its
wrappers and registers its `ArchitectureSpec`; `registry` holds the fixed vocabulary of O parts
(o_attention, o_ffn, o_norm). Importing this package imports them all, so every architecture is registered.
"""

from retrofit.adapters import tabpfn_v2, tabpfn_v3, tabpfn_v3_5
from retrofit.adapters.block import KV_CACHE_REFUSAL, OBlock
from retrofit.adapters.closed_model import OClosedModel, close_model
from retrofit.adapters.in_context_attention import AttentionSettings
from retrofit.adapters.registry import (
    ADAPTERS,
    ARCHITECTURES,
    PARTS,
    AdapterSpec,
    ArchitectureSpec,
    adapter,
    architecture_of,
    in_context_blocks,
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
    "register_architecture",
    "tabpfn_v2",
    "tabpfn_v3",
    "tabpfn_v3_5",
]
