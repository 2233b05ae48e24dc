"""o_closed under tabpfn's memory saving: the closed model runs in tabpfn's chunks
(`retrofit.adapters.chunks`), agrees with its unchunked run and stays closed."""

import numpy as np
import pytest
import torch
from synthetic import fit_synthetic
from tabpfn.architectures.interface import PerformanceOptions
from test_tabpfn_v3 import CLOSED_ARCHITECTURES, _insert_absent, _model_inputs

import retrofit
from retrofit.adapters.chunks import chunk_slices, per_token_in_chunks

CHUNKED = PerformanceOptions(save_peak_memory_factor=3)
"""A factor that leaves uneven chunks on the tiny tables below."""


@pytest.fixture(scope="module", params=CLOSED_ARCHITECTURES)
def closed_model_inputs(request, make_random_host):
    """(the o_closed model of a tiny random host fitted with 2 members, its input x, y)."""
    regressor, X_test = fit_synthetic(make_random_host(request.param), n_estimators=2, f=5)
    patched = retrofit.retrofit(regressor, "o_closed")
    return patched.models_[0], *_model_inputs(patched, X_test)


def test_chunks_are_tabpfns():
    assert chunk_slices(10, 3) == [slice(0, 4), slice(4, 8), slice(8, 10)]
    assert chunk_slices(2, 8) == [slice(0, 1), slice(1, 2)]
    assert chunk_slices(5, None) == [slice(0, 5)]


def test_per_token_chunks_compute_the_same_map():
    x_BRE, p_BR = torch.randn(2, 7, 5), torch.rand(2, 7)

    def gated(x_xE, p_x):
        return x_xE * p_x[..., None] + 1

    chunked = per_token_in_chunks(gated, 4, x_BRE.clone(), p_BR)
    assert torch.equal(chunked, gated(x_BRE, p_BR)) and torch.equal(
        per_token_in_chunks(gated, None, x_BRE, p_BR), chunked
    )


def test_chunked_o_closed_agrees_with_unchunked(closed_model_inputs):
    model, x, y = closed_model_inputs
    with torch.inference_mode():
        whole, chunked = model(x, y), model(x, y, performance_options=CHUNKED)
    assert float((chunked - whole).abs().max()) <= 1e-6 * float(whole.abs().max())


def test_chunked_o_closed_stays_closed(closed_model_inputs):
    model, x, y = closed_model_inputs
    with torch.inference_mode():
        reference = model(x, y, performance_options=CHUNKED)
        x_pad, y_pad, presence, old_test = _insert_absent(x, y, k=5)
        padded = model(x_pad, y_pad, performance_options=CHUNKED, **presence)
    assert torch.all(padded[~old_test] == 0)
    assert float((padded[old_test] - reference).abs().max()) <= 1e-5 * float(reference.abs().max())


@pytest.mark.parametrize("mode", [True, "auto"])
def test_memory_saving_predicts_as_without(make_random_host, monkeypatch, mode):
    """Forced, and automatic (tabpfn's CPU rule, here made to say yes): the closed model receives
    tabpfn's factor and predicts what it predicts without memory saving."""
    monkeypatch.setattr("tabpfn.memory._should_save_peak_mem_cpu", lambda *shapes: True)
    path = make_random_host("tabpfn_v3")
    plain, X_test = fit_synthetic(path, n_estimators=2, f=5, memory_saving_mode=False)
    saving, _ = fit_synthetic(path, n_estimators=2, f=5, memory_saving_mode=mode)
    patched = retrofit.retrofit(saving, "o_closed")
    factors = []
    patched.models_[0].register_forward_pre_hook(
        lambda module, args, kwargs: factors.append(kwargs["performance_options"].save_peak_memory_factor),
        with_kwargs=True,
    )
    unchunked, chunked = retrofit.retrofit(plain, "o_closed").predict(X_test), patched.predict(X_test)
    assert factors and all(f is not None and f > 1 for f in factors)
    np.testing.assert_allclose(chunked, unchunked, rtol=1e-6, atol=1e-6 * np.abs(unchunked).max())
