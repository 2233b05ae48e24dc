"""The registered architectures (tabpfn_v3, tabpfn_v3_5 and the v2 family) and the three O adapters."""

from retrofit.adapters.registry import AdapterSpec, ArchitectureSpec, register_adapter, register_architecture
from retrofit.adapters.tabpfn_v2 import OTabPFNBlockV2
from retrofit.adapters.tabpfn_v3 import OICLBlockV3
from retrofit.adapters.tabpfn_v3_5 import OICLBlockV3p5
from retrofit.adapters.tabpfn_v3_5_closed import OClosedTabPFNV3p5
from retrofit.adapters.tabpfn_v3_closed import V2_REFUSAL, OClosedTabPFNV3

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

register_adapter(
    AdapterSpec(
        "o_attention", "attention", "retrofit.ops.o_attention: hidden-carrier OAttention (p_i gates, p_j weighs)"
    )
)
register_adapter(AdapterSpec("o_ffn", "ffn", "retrofit.ops.o_ffn: h + p * FFN(norm(h))"))
register_adapter(AdapterSpec("o_norm", "norm", "retrofit.ops.o_norm: norm with its bias gated by p (0 -> 0)"))
