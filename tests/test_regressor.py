"""`retrofit.hosts.regressor.make_regressor`: the checkpoint comes through `path`, checked, never through
tabpfn's own `model_path`."""

import pytest

from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor


def test_make_regressor_does_not_take_an_unchecked_model_path(tmp_path):
    with pytest.raises(RetrofitError, match=r"drop model_path=.*and pass it as `path`"):
        make_regressor(get_path("tiny_v3"), model_path=str(tmp_path / "elsewhere-v3.ckpt"))
