"""Zero absorption (OFFN, ONorm, o_linear, OInject) and zero mass (OStandardize)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from benchmarks.null_insertion import randomise_
from retrofit.ops import OFFN, OInject, ONorm, OStandardize, o_linear, presence
from retrofit.ops.insertion import insert_rows, keep_mask

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
FAST = settings(max_examples=20, deadline=None)


def biased(module: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial random weights, biases and LayerNorm affines (zero biases would hide leaks)."""
    return randomise_(module, bias_std=0.5, generator=torch.Generator().manual_seed(seed))


def rows_with_nulls(dtype, seed=0, B=3, L=6, E=8):
    g = torch.Generator().manual_seed(seed)
    h_BLE = torch.randn(B, L, E, generator=g)
    h_BLE[:, 1::2] = 0
    return h_BLE.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_offn_keeps_null_rows_zero_and_updates_active_rows(dtype):
    ffn = biased(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))).to(dtype)
    norm = biased(nn.LayerNorm(8)).to(dtype)
    h_BLE = rows_with_nulls(dtype)
    out_BLE = OFFN(ffn, tau=1.0, norm=norm)(h_BLE)
    assert out_BLE.dtype == dtype
    assert (out_BLE[:, 1::2] == 0).all()
    p_BL = presence(h_BLE, 1.0)
    expected = h_BLE.float() + p_BL[..., None] * ffn(norm(h_BLE)).float()
    torch.testing.assert_close(out_BLE[:, ::2].float(), expected[:, ::2], rtol=0, atol=4 * torch.finfo(dtype).eps * 8)
    assert not (ffn(norm(h_BLE))[:, 1::2] == 0).all(), "the plain FFN must re-activate 0 here"


@pytest.mark.parametrize("norm", [nn.LayerNorm(8), nn.LayerNorm(8, bias=False), nn.RMSNorm(8)], ids=repr)
def test_onorm_maps_zero_to_zero_and_is_near_identity(norm):
    norm = biased(norm, seed=1)
    h_BLE = 10 * rows_with_nulls(torch.float32)  # ||h||^2 ~ 800 >> tau: p ~ 1
    out_BLE = ONorm(norm, tau=1.0)(h_BLE)
    assert (out_BLE[:, 1::2] == 0).all()
    bias = getattr(norm, "bias", None)
    # Near-identity bound: |ONorm(h) - norm(h)| = (1 - p) |bias| <= tau / ||h||^2 * |bias|.
    bound = 0.0 if bias is None else (1 - presence(h_BLE, 1.0))[..., None] * bias.abs()
    assert ((out_BLE - norm(h_BLE)).abs() <= bound + 1e-6)[:, ::2].all()
    assert ONorm(norm, tau=1.0).base_layer is norm


def test_onorm_rejects_unsupported_norms():
    with pytest.raises(TypeError, match="o_norm supports"):
        ONorm(nn.BatchNorm1d(8), tau=1.0)(torch.zeros(2, 8))


def test_o_linear_gates_only_the_bias():
    linear = biased(nn.Linear(8, 8))
    h_BLE = rows_with_nulls(torch.float32)
    p_BL = presence(h_BLE, 1.0)
    out_BLE = o_linear(h_BLE, p_BL, linear)
    assert (out_BLE[:, 1::2] == 0).all()
    torch.testing.assert_close(out_BLE, h_BLE @ linear.weight.T + p_BL[..., None] * linear.bias)


@pytest.mark.parametrize("dtype", DTYPES)
def test_oinject_gives_null_rows_nothing_and_real_rows_the_encoding(dtype):
    encoder = biased(nn.Linear(5, 8)).to(dtype)
    x_BLF = torch.randn(3, 6, 5).to(dtype)
    p_BL = torch.ones(3, 6)
    p_BL[:, 1::2] = 0
    out_BLE = OInject(encoder)(x_BLF, p_BL)
    assert (out_BLE[:, 1::2] == 0).all()
    assert torch.equal(out_BLE[:, ::2], encoder(x_BLF)[:, ::2])


@FAST
@given(seed=st.integers(0, 2**31 - 1), positions=st.lists(st.integers(0, 12), min_size=1, max_size=6))
def test_ostandardize_null_rows_carry_no_mass(seed, positions):
    """Inserting null rows (even NaN-filled) changes no active output beyond rounding, and the
    null rows come out exactly 0; active rows are standardised with presence-weighted moments."""
    g = torch.Generator().manual_seed(seed)
    x_BRC = 3 + 2 * torch.randn(2, 12, 4, generator=g)
    p_BR = torch.rand(2, 12, generator=g).clamp_min(0.05)
    out_BRC = OStandardize(dim=1)(x_BRC, p_BR[..., None])
    w = p_BR[..., None].double() / p_BR.double().sum(1)[:, None, None]
    mean = (w * x_BRC.double()).sum(1, keepdim=True)
    std = ((w * (x_BRC.double() - mean) ** 2).sum(1, keepdim=True) + 1e-5).sqrt()
    torch.testing.assert_close(out_BRC.double(), (x_BRC.double() - mean) / std, rtol=1e-5, atol=1e-5)

    keep = keep_mask(12, positions)
    x_ins, p_ins = insert_rows(x_BRC, keep, dim=1, fill=torch.nan), insert_rows(p_BR, keep, dim=1)
    out_ins = OStandardize(dim=1)(x_ins, p_ins[..., None])
    assert (out_ins[:, ~keep] == 0).all()
    tol = 8 * torch.finfo(torch.float32).eps * out_BRC.abs().max()
    torch.testing.assert_close(out_ins[:, keep], out_BRC, rtol=0, atol=tol)


def test_ostandardize_without_active_rows_is_zero():
    out = OStandardize(dim=1)(torch.randn(2, 5, 3), torch.zeros(2, 5, 1))
    assert (out == 0).all()
