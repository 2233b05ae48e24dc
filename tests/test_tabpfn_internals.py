"""The private tabpfn symbols the harness uses exist, with the keyword parameters it passes."""

import importlib
import inspect

import pytest
from synthetic import fit_synthetic

from retrofit.tabpfn_internals import PRIVATE, Private


def owner_of(symbol: Private):
    module, _, cls = symbol.owner.partition(":")
    owner = importlib.import_module(module)
    return getattr(owner, cls) if cls else owner


@pytest.fixture(scope="module")
def v3_model(make_random_host):
    return fit_synthetic(make_random_host("tabpfn_v3"), n=20, n_train=20, f=3)[0].models_[0]


@pytest.mark.parametrize("symbol", PRIVATE, ids=lambda s: f"{s.owner}.{s.name}")
def test_private_symbol_is_where_the_harness_reaches_for_it(symbol, request):
    owner = owner_of(symbol)
    if symbol.instance:
        model = request.getfixturevalue("v3_model")
        assert isinstance(model, owner), f"{type(model)} is not {symbol.owner}"
        assert hasattr(model, symbol.name), f"tabpfn's {symbol.owner} no longer sets {symbol.name}"
        return
    assert hasattr(owner, symbol.name), f"tabpfn's {symbol.owner} no longer has {symbol.name}"
    params = inspect.signature(getattr(owner, symbol.name)).parameters
    missing = [name for name in symbol.params if name not in params]
    assert not missing, f"{symbol.owner}.{symbol.name} no longer takes {missing}"
