"""o_closed under tabpfn's memory saving and chunked inference: the closed model runs in tabpfn's
chunks (`retrofit.adapters.chunks`; rows of the stages before the in-context blocks,
`OClosedTabPFNV3.row_chunk_size`), agrees with its unchunked run and stays closed."""

import numpy as np
import pytest
import torch
from synthetic import fit_synthetic
from tabpfn.architectures.interface import PerformanceOptions
from test_tabpfn_v3 import CLOSED_ARCHITECTURES, _insert_absent, _model_inputs

import retrofit
from retrofit.adapters import tabpfn_v3
from retrofit.adapters.chunks import chunk_slices, per_token_in_chunks

CHUNKED = PerformanceOptions(save_peak_memory_factor=3)
"""A factor that leaves uneven chunks on the tiny tables below."""
ROW_CHUNKED = PerformanceOptions(use_chunkwise_inference=True)
"""tabpfn_v3's default in inference: the stages before the blocks in chunks of rows."""
ROWS_PER_CHUNK = 7
"""Rows per chunk the tests below size `inference_chunk_cells` for (uneven on their tables)."""


def _row_chunks(monkeypatch, model, B, C):
    """Size `model`'s chunked inference for `ROWS_PER_CHUNK` rows of B tables x C columns and
    chunks of 2 columns where the inducing points read the train rows; returns the list each call
    of the closed model's `aggregated` (one per row chunk) appends its row count to."""
    monkeypatch.setattr(model.base_layer, "inference_chunk_cells", ROWS_PER_CHUNK * B * C)
    monkeypatch.setattr(model.base_layer, "inference_col_chunk_size", 2)
    rows = []
    aggregated = type(model).aggregated

    def counted(self, x_BRCE, *args):
        rows.append(x_BRCE.shape[1])
        return aggregated(self, x_BRCE, *args)

    monkeypatch.setattr(type(model), "aggregated", counted)
    return rows


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


def test_row_chunked_o_closed_agrees_with_unchunked(closed_model_inputs, monkeypatch):
    model, x, y = closed_model_inputs
    R, B, C = x.shape
    with torch.inference_mode():
        whole = model(x, y)
        rows = _row_chunks(monkeypatch, model, B, C)
        chunked = model(x, y, performance_options=ROW_CHUNKED)
    assert rows == [min(ROWS_PER_CHUNK, R - start) for start in range(0, R, ROWS_PER_CHUNK)]
    assert float((chunked - whole).abs().max()) <= 1e-6 * float(whole.abs().max())


def test_row_chunked_o_closed_stays_closed(closed_model_inputs, monkeypatch):
    model, x, y = closed_model_inputs
    with torch.inference_mode():
        reference = model(x, y)
        x_pad, y_pad, presence, old_test = _insert_absent(x, y, k=5)
        rows = _row_chunks(monkeypatch, model, x_pad.shape[1], x_pad.shape[2])
        padded = model(x_pad, y_pad, performance_options=ROW_CHUNKED, **presence)
    assert len(rows) > 1
    assert torch.all(padded[~old_test] == 0)
    assert float((padded[old_test] - reference).abs().max()) <= 1e-5 * float(reference.abs().max())


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5"])
def test_predict_runs_the_row_chunks_tabpfn_runs(make_random_host, monkeypatch, arch):
    """Through `predict` (tabpfn's engine asks for chunked inference): the closed model makes as
    many row chunks as the stock model does with the same `inference_chunk_cells`, and predicts
    what it predicts unchunked up to rounding (a CPU matmul may round a row differently with
    another number of rows beside it)."""
    regressor, X_test = fit_synthetic(make_random_host(arch), n_estimators=2, f=5)
    unchunked = retrofit.retrofit(regressor, "o_closed").predict(X_test)
    patched = retrofit.retrofit(regressor, "o_closed")
    (x, _), closed = _model_inputs(patched, X_test), patched.models_[0]
    rows = _row_chunks(monkeypatch, closed, x.shape[1], x.shape[2])
    stock_chunks = []
    stock = regressor.models_[0]
    monkeypatch.setattr(stock, "inference_chunk_cells", closed.base_layer.inference_chunk_cells)
    process = stock._process_row_chunk
    monkeypatch.setattr(stock, "_process_row_chunk", lambda **kw: stock_chunks.append(kw) or process(**kw))
    chunked = patched.predict(X_test)
    regressor.predict(X_test)
    assert len(rows) == len(stock_chunks) > 1
    np.testing.assert_allclose(chunked, unchunked, rtol=1e-5, atol=1e-5 * np.abs(unchunked).max())


def test_running_out_of_memory_halves_the_chunks_as_tabpfn_does(closed_model_inputs, monkeypatch):
    """A GPU out-of-memory error in a pass starts it again with half its chunk, stored on the host
    as tabpfn stores it; the result is what the smaller chunks compute."""
    model, x, y = closed_model_inputs
    R, B, C = x.shape
    with torch.inference_mode():
        whole = model(x, y)
        rows = _row_chunks(monkeypatch, model, B, C)  # 7 rows, 2 columns per chunk
        counted, inducing = type(model).aggregated, tabpfn_v3.o_inducing_hidden

        def aggregated(self, x_BRCE, *args):
            if x_BRCE.shape[1] > 3:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return counted(self, x_BRCE, *args)

        def inducing_hidden(embedder, x_BNUE, *args):
            if x_BNUE.shape[2] > 1:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return inducing(embedder, x_BNUE, *args)

        monkeypatch.setattr(type(model), "aggregated", aggregated)
        monkeypatch.setattr(tabpfn_v3, "o_inducing_hidden", inducing_hidden)
        chunked = model(x, y, performance_options=ROW_CHUNKED)
    assert model.base_layer.inference_col_chunk_size == 1 and model.base_layer.inference_chunk_cells == 3 * B * C
    assert rows == [min(3, R - start) for start in range(0, R, 3)]
    assert float((chunked - whole).abs().max()) <= 1e-6 * float(whole.abs().max())


def test_another_error_in_a_chunk_is_raised_as_it_is(closed_model_inputs, monkeypatch):
    model, x, y = closed_model_inputs
    _row_chunks(monkeypatch, model, x.shape[1], x.shape[2])
    cells = model.base_layer.inference_chunk_cells

    def broken(self, *args):
        raise RuntimeError("expected a 3-D tensor")

    monkeypatch.setattr(type(model), "aggregated", broken)
    with torch.inference_mode(), pytest.raises(RuntimeError, match="expected a 3-D tensor"):
        model(x, y, performance_options=ROW_CHUNKED)
    assert model.base_layer.inference_chunk_cells == cells
