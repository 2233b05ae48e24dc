"""`retrofit.hosts.random_host`: a random host is written as a checkpoint that loads through tabpfn,
predicts reproducibly and holds exactly the weights tabpfn loads."""

from functools import partial

import numpy as np
import pytest
import torch
from safetensors import safe_open
from synthetic import regression_data

from retrofit.adapters import ARCHITECTURES
from retrofit.hosts import make_regressor
from retrofit.hosts.random_host import TINY_ARCHS

_data = partial(regression_data, n=120, curved=False)


@pytest.mark.parametrize(
    "arch_name",
    [
        pytest.param(a, marks=pytest.mark.skipif(a not in ARCHITECTURES, reason=f"{a} has no adapter spec yet"))
        for a in sorted(TINY_ARCHS)
    ],
)
def test_saved_host_loads_through_tabpfn_and_predicts(make_random_host, arch_name):
    path = make_random_host(arch_name)
    X, y = _data()
    reg = make_regressor(path, n_estimators=2, random_state=0).fit(X[:80], y[:80])
    pred = reg.predict(X[80:])
    assert pred.shape == (40,) and np.isfinite(pred).all()
    # Same file, same seed: the prediction is reproducible bit for bit.
    again = make_regressor(path, n_estimators=2, random_state=0).fit(X[:80], y[:80]).predict(X[80:])
    np.testing.assert_array_equal(pred, again)


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3"])
def test_saved_weights_round_trip_exactly(make_random_host, arch_name):
    path = make_random_host(arch_name)
    reg = make_regressor(path, n_estimators=1).fit(*_data())
    loaded = reg.models_[0].state_dict()
    with safe_open(str(path), framework="pt") as fh:
        for key in loaded:
            assert torch.equal(loaded[key], fh.get_tensor(key)), key
        header = fh.metadata()
    assert set(header) >= {"config", "architecture_name", "inference_config"}
