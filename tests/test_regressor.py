"""`retrofit.hosts.regressor.make_regressor`: the checkpoint comes through `path`, checked, never through
tabpfn's own `model_path`; an inference_config key tabpfn lacks is refused when the regressor is made."""

import pytest
from refusals import one_line
from synthetic import small_regression_data

from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor


def test_make_regressor_does_not_take_an_unchecked_model_path(tmp_path):
    with pytest.raises(RetrofitError, match=r"drop model_path=.*and pass it as `path`"):
        make_regressor(get_path("tiny_v3"), model_path=str(tmp_path / "elsewhere-v3.ckpt"))


def test_an_inference_config_key_tabpfn_lacks_is_refused_naming_the_closest():
    """A misspelt key was taken by make_regressor and refused only by the fit, in pydantic's four lines
    ("1 validation error for InferenceConfig ... Unexpected keyword argument")."""
    with pytest.raises(RetrofitError) as err:
        make_regressor(get_path("tiny_v3"), inference_config={"FEATURE_SHIFT_METHOD": None, "PASSTHRU_INF": True})
    assert one_line(err).startswith(
        "inference_config has no key 'PASSTHRU_INF' (did you mean 'PASSTHROUGH_INF'?); tabpfn's InferenceConfig "
        "takes ['PREPROCESS_TRANSFORMS', "
    )
    X, y = small_regression_data()
    kept = make_regressor(get_path("tiny_v3"), n_estimators=1, inference_config={"PASSTHROUGH_INF": True}).fit(X, y)
    assert kept.get_inference_config().PASSTHROUGH_INF is True
