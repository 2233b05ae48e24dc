"""The operation counter (`benchmarks.tools.op_count`) and what it says of a retrofitted block."""

import pytest
import torch
from synthetic import fit_synthetic

import retrofit
from benchmarks.tools.op_count import dispatched_ops
from retrofit.adapters import architecture_of

SYNCHRONISING = {"aten._local_scalar_dense.default", "aten.is_nonzero.default", "aten.item.default"}
"""Operations that read a device value back on the host (a GPU stream waits for them)."""


def test_counts_each_dispatched_operation_below_autograd():
    """Composite operations count as what they dispatch (`square` is `pow`)."""
    x = torch.ones(3)
    counts = dispatched_ops(lambda: (x + 1).square().sum())
    assert counts == {"aten.add.Tensor": 1, "aten.pow.Tensor_Scalar": 1, "aten.sum.default": 1}
    assert counts.total() == 3 and dispatched_ops(lambda: None).total() == 0


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5"])
def test_a_full_o_block_of_one_member_reads_nothing_back_and_adds_few_operations(make_random_host, arch):
    """With one ensemble member a full_o block computes its presences, tau, bias and gates without
    a value read back to the host, in at most twice the stock block's operations."""
    regressor, _ = fit_synthetic(make_random_host(arch), n_estimators=1, f=5)
    counted = {}
    for name, model in (("stock", regressor), ("full_o", retrofit.retrofit(regressor, "full_o"))):
        engine = model.models_[0]
        block = engine.get_submodule(architecture_of(engine).blocks)[0]
        x_BRE = torch.randn(1, 20, getattr(block, "base_layer", block).layernorm.normalized_shape[0])
        with torch.inference_mode():
            counted[name] = dispatched_ops(lambda block=block, x_BRE=x_BRE: block(x_BRE.clone(), 15))
    assert not SYNCHRONISING & set(counted["full_o"])
    assert counted["stock"].total() < counted["full_o"].total() <= 2 * counted["stock"].total()
