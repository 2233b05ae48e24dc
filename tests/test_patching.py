"""`retrofit.retrofit` and `retrofit.unpatch` (`retrofit.patching`): an unfitted regressor is refused; a
constant target predicts the constant under every variant, as stock tabpfn does."""

import numpy as np
import pytest
from synthetic import small_regression_data
from tabpfn import TabPFNRegressor

import retrofit
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor


def test_unpatch_of_an_unfitted_regressor_is_refused():
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted TabPFNRegressor: this one is not fitted"):
        retrofit.unpatch(make_regressor(get_path("tiny_v3")))
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted tabpfn.TabPFNRegressor, got RetrofitRegressor"):
        retrofit.unpatch(retrofit.RetrofitRegressor())


def test_o_closed_on_a_constant_target_predicts_the_constant_like_stock_tabpfn():
    """Stock tabpfn predicts a constant target without running a model; so does every variant."""
    X, _ = small_regression_data()
    stock = make_regressor(get_path("tiny_v3"), n_estimators=1).fit(X[:40], np.full(40, 2.5))
    expected = stock.predict(X[40:])
    np.testing.assert_array_equal(expected, np.full(20, 2.5))
    for variant in ("baseline", "full_o", "o_closed"):
        patched = retrofit.retrofit(stock, variant)
        np.testing.assert_array_equal(patched.predict(X[40:]), expected)
    assert patched.retrofit_report_.closed
    np.testing.assert_array_equal(retrofit.predict_many([(patched, X[40:])])[0], expected)
    restored = retrofit.unpatch(patched)
    assert type(restored) is TabPFNRegressor and not any(type(m).__name__.startswith("O") for m in restored.models_)
