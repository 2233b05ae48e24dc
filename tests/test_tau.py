"""`retrofit.adapters.tau`: the calibrated tau ignores null carriers and is one computation from
the carriers or their squared norms; a rule that is not finite, or outside float32's normal range, is
refused at `retrofit` and at the estimator's fit, not at predict."""

import math

import pytest
import torch
from refusals import one_line

import retrofit
from retrofit.adapters import TauRule
from retrofit.errors import RetrofitError
from retrofit.ops.presence import presence_ratio, squared_norm


def test_tau_of_squared_norms_is_tau_of_the_carriers():
    """A block computes each carrier's squared norms once, for its tau and its presence: the same bits."""
    h_BXE = torch.randn(3, 11, 8, generator=torch.Generator().manual_seed(0))
    h_BXE[1, 2:5] = 0
    for rule in (TauRule("calibrated", c=1e-3), TauRule("absolute", value=0.5)):
        assert torch.equal(rule.tau_of_squared(squared_norm(h_BXE)), rule.tau(h_BXE))


def test_tau_calibration_ignores_null_carriers():
    rule = TauRule("calibrated", c=1e-3)
    h_BXE = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(0))
    with_nulls = torch.cat([h_BXE[:, :4], torch.zeros(2, 5, 8), h_BXE[:, 4:]], dim=1)
    assert torch.equal(rule.tau(h_BXE), rule.tau(with_nulls))
    median = h_BXE.square().sum(-1).median(dim=1).values
    assert torch.allclose(rule.tau(h_BXE), 1e-3 * median)


FLOAT32 = torch.finfo(torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_calibrated_tau_is_finite_and_positive_on_every_context(dtype):
    """Per batch element: an all-null context gives c; a c * median below the dtype's normal range
    gives its smallest normal, one above it (c large, or an overflowed, infinite squared norm) its
    largest; a subnormal squared norm is a carrier like any other (only exact zeros are null). The
    presence of a null carrier stays exactly 0 under each."""
    finfo = torch.finfo(dtype)
    sq_BX = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0],  # all null
            [finfo.tiny, finfo.tiny, 0.0, 2.0],  # c * median underflows the normal range
            [math.inf, math.inf, 1.0, 0.0],  # median +inf
            [finfo.tiny / 8, 0.0, 0.0, 0.0],  # one subnormal carrier
            [4.0, 0.0, 1.0, 9.0],  # ordinary: the lower median of the non-null carriers is 4
        ],
        dtype=dtype,
    )
    c = 1e-3
    ordinary = torch.tensor(4.0, dtype=dtype) * c
    expected_B = torch.tensor([c, finfo.tiny, finfo.max, finfo.tiny, ordinary.item()], dtype=dtype)
    for keepdim in (False, True):
        tau_B = TauRule("calibrated", c=c).tau_of_squared(sq_BX, keepdim=keepdim)
        assert tau_B.dtype == dtype and torch.equal(tau_B, expected_B[:, None] if keepdim else expected_B)
    assert (presence_ratio(torch.zeros_like(sq_BX), tau_B) == 0).all()
    overflowing = TauRule("calibrated", c=FLOAT32.max).tau_of_squared(torch.tensor([[4.0, 0.0]]))
    assert overflowing.item() == FLOAT32.max


@pytest.mark.parametrize(
    "tau",
    [
        {"mode": "absolute", "value": math.inf},
        {"mode": "absolute", "value": math.nan},
        {"mode": "calibrated", "c": math.inf},
    ],
)
def test_tau_must_be_finite_at_retrofit_not_at_predict(tiny_v3_fitted, tau):
    with pytest.raises(RetrofitError, match=r"needs tau\.(value|c) > 0 and finite"):
        retrofit.retrofit(tiny_v3_fitted[0], "full_o", tau=tau)


@pytest.mark.parametrize(
    ("tau", "key"),
    [
        ({"mode": "absolute", "value": 1e-320}, "value"),
        ({"mode": "absolute", "value": 1e39}, "value"),
        ({"mode": "calibrated", "c": 1e-320}, "c"),
        ({"mode": "calibrated", "c": 1e39}, "c"),
    ],
)
def test_tau_outside_float32_is_refused_before_fitting(tiny_v3_fitted, tau, key):
    """tau 1e-320 failed at predict (ValueError from the presence op); 1e39 via RetrofitRegressor
    with torch's `RuntimeError: value cannot be converted to type float without overflow`."""
    with pytest.raises(RetrofitError, match=rf"tau\.{key}=1e[-+]?\d+ is outside float32's normal range") as err:
        retrofit.retrofit(tiny_v3_fitted[0], "full_o", tau=tau)
    one_line(err)
    estimator = retrofit.RetrofitRegressor("full_o", n_estimators=1, device="cpu", tau=tau)
    with pytest.raises(RetrofitError, match="outside float32's normal range"):
        estimator.fit(tiny_v3_fitted[1], tiny_v3_fitted[2])
    assert not hasattr(estimator, "regressor_")
