"""`retrofit.adapters.block`: a wrapped in-context block in tabpfn's chunks, releasing its input,
and accounting for everything its block holds (tiny random hosts)."""

import copy
import re
import weakref

import pytest
import torch
from torch import nn

from retrofit.adapters import ARCHITECTURES, OBlock, architecture_of, in_context_blocks
from retrofit.adapters.block import unaccounted
from retrofit.adapters.tabpfn_v3 import OICLBlockV3
from retrofit.errors import RetrofitError
from retrofit.patching import retrofit


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5", "tabpfn_v2"])
def test_chunked_block_equals_unchunked(fitted, arch):
    regressor, _ = fitted(arch)
    patched = retrofit(regressor, "full_o")
    spec = architecture_of(patched.models_[0])
    block = patched.models_[0].get_submodule(spec.blocks)[0]
    shape = {"tabpfn_v3": (4, 20, 128), "tabpfn_v3_5": (4, 20, 64), "tabpfn_v2": (4, 20, 3, 32)}[arch]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        whole, _ = block(x.clone(), 15, None)
        chunked, _ = block(x.clone(), 15, 3)
    # same mathematics; only the matrix-multiply batch sizes (hence rounding) differ
    torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-6 * float(whole.abs().max()))


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2"])
def test_a_block_releases_its_input_once_used(fitted, arch):
    """Given its input in a one-element list (as tabpfn's v2 models pass it), a wrapped block holds
    no reference to it by the time its FFN runs: the input's memory is free for the rest of the
    block, as in the stock block."""
    regressor, _ = fitted(arch)
    patched = retrofit(regressor, "full_o")
    block = patched.models_[0].get_submodule(architecture_of(patched.models_[0]).blocks)[0]
    shape = {"tabpfn_v3": (2, 20, 128), "tabpfn_v2": (2, 20, 3, 32)}[arch]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    alive_at_ffn = []
    with torch.no_grad():
        expected, _ = block(x.clone(), 15)
        container = [x.clone()]
        input_ref = weakref.ref(container[0])
        hook = block.base_layer.mlp.register_forward_pre_hook(lambda *_: alive_at_ffn.append(input_ref() is not None))
        try:
            out, _ = block(container, 15)
        finally:
            hook.remove()
    assert container == [] and alive_at_ffn == [False]
    assert torch.equal(out, expected)


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_every_registered_wrapper_accounts_for_its_whole_block(fitted, arch):
    regressor, _ = fitted(arch)
    wrapper = ARCHITECTURES[arch].wrapper
    for block in in_context_blocks(regressor.models_[0]):
        assert unaccounted(block, wrapper.required) == []


def test_a_block_with_a_parameter_or_submodule_no_wrapper_reads_is_refused(fitted):
    """Parameters added to re-implemented submodules (the attention, its softmax scaling) and a new
    submodule of the block are named (the submodule once, not its contents); retrofit refuses
    before anything is swapped."""
    regressor, _ = fitted("tabpfn_v3")
    grown = copy.deepcopy(regressor)
    block = in_context_blocks(grown.models_[0])[1]
    block.icl_attention.gate = nn.Parameter(torch.ones(4))
    block.icl_attention.softmax_scaling_layer.temperature = nn.Parameter(torch.ones(1))
    block.extra_norm = nn.LayerNorm(8)
    stray = ["extra_norm", "icl_attention.gate", "icl_attention.softmax_scaling_layer.temperature"]
    assert sorted(unaccounted(block, OICLBlockV3.required)) == stray
    with pytest.raises(RetrofitError, match=re.escape(str(stray))):
        retrofit(grown, "oa_only")
    assert not any(isinstance(m, OBlock) for m in grown.models_[0].modules())
