"""presence(h, tau): range, exact zero at the origin in every dtype, tau validation."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from retrofit.ops import presence
from retrofit.ops.presence import presence_of_squared, squared_norm

DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([1e-3, 1.0, 1e2]), tau=st.floats(1e-3, 1e3))
def test_presence_is_formula_in_unit_interval_and_zero_at_origin(seed, scale, tau, dtype):
    g = torch.Generator().manual_seed(seed)
    h_BLE = (scale * torch.randn(3, 7, 16, generator=g)).to(dtype)
    h_BLE[:, ::3] = 0
    p_BL = presence(h_BLE, tau)
    assert p_BL.shape == (3, 7) and p_BL.dtype == torch.promote_types(dtype, torch.float32)
    assert (p_BL[:, ::3] == 0).all()
    assert ((p_BL >= 0) & (p_BL <= 1)).all()  # p < 1 exactly; it may round to 1.0
    sq = h_BLE.double().square().sum(-1)
    torch.testing.assert_close(p_BL.double(), sq / (tau + sq), rtol=1e-6, atol=0)


def test_half_precision_norm_does_not_overflow():
    h_E = torch.full((64,), 200.0, dtype=torch.float16)  # ||h||^2 = 2.56e6 > fp16 max
    assert math.isclose(presence(h_E, 1.0).item(), 2.56e6 / (1 + 2.56e6), rel_tol=1e-6)


def test_tensor_tau_broadcasts():
    h_BLE = torch.ones(2, 3, 4)  # ||h||^2 = 4
    tau_BL = torch.tensor([[4.0], [12.0]])
    torch.testing.assert_close(presence(h_BLE, tau_BL), torch.tensor([[0.5] * 3, [0.25] * 3]))


@pytest.mark.parametrize("tau", [0.0, -1.0, math.nan, math.inf, torch.tensor([1.0, 0.0])])
def test_nonpositive_tau_is_rejected(tau):
    with pytest.raises(ValueError, match="tau must be finite and > 0"):
        presence(torch.ones(2, 4), tau)


def test_presence_of_a_slice_of_squared_norms_is_the_presence_of_the_slice():
    """Squared norms computed once for all rows serve any subset of rows bitwise (a row's sum
    does not depend on the other rows), so a block shares them between tau and presence."""
    h_BRCE = torch.randn(2, 30, 3, 17, generator=torch.Generator().manual_seed(1))
    sq_BRC = squared_norm(h_BRCE)
    assert torch.equal(presence_of_squared(sq_BRC, 0.7), presence(h_BRCE, 0.7))
    assert torch.equal(sq_BRC[:, :11].reshape(2, -1), squared_norm(h_BRCE[:, :11].reshape(2, -1, 17)))
    assert torch.equal(sq_BRC.transpose(1, 2)[:, :, 4:9], squared_norm(h_BRCE.transpose(1, 2).contiguous()[:, :, 4:9]))
