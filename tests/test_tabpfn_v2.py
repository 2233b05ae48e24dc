"""`retrofit.adapters.tabpfn_v2`: the v2 family refuses the whole-model closure with the reason
(its in-context block wrapper is tested with every architecture's in test_patching.py and
test_block.py)."""

import pytest
from synthetic import fit_synthetic

import retrofit
from retrofit.errors import RetrofitError


def test_v2_family_is_refused_with_the_reason(make_random_host):
    regressor, _ = fit_synthetic(make_random_host("tabpfn_v2"), n_estimators=2, f=5)
    with pytest.raises(RetrofitError, match=r"standardise every feature over the train rows.*between features"):
        retrofit.retrofit(regressor, "o_closed")
