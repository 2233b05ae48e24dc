"""`retrofit.adapters.tau`: a tau rule that is not finite, or outside float32's normal range, is refused at
`retrofit` and at the estimator's fit, not at predict."""

import math

import pytest
from refusals import one_line

import retrofit
from retrofit.errors import RetrofitError


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
