"""The v2 family's column embeddings: carried by the host, the same whatever the device draws."""

import copy
import logging
import pickle

import numpy as np
import pytest
import torch
from synthetic import fit_synthetic

from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint, get_path
from retrofit.hosts.checkpoint import build_host, save_as_published, set_borders
from retrofit.hosts.column_embeddings import (
    HEADER_FIELD,
    LAYER,
    ColumnEmbeddings,
    StoredColumnEmbedding,
    carried,
    cpu_draws,
    draws_on_device,
    pin_drawn,
    stored,
)
from retrofit.hosts.random_host import RANDOM_HOST_COLUMNS, TINY_ARCHS, random_host

V2_FAMILY = ["tabpfn_v2", "tabpfn_v2_5", "tabpfn_v2_6"]


class OtherDeviceGenerator(torch.Generator):
    """What a generator on another device amounts to: the same seed, other numbers. tabpfn draws with
    `torch.Generator(device=x.device)`; a generator made without `device` (a CPU draw) is left alone."""

    def __init__(self, device=None):
        super().__init__()
        self.other = device is not None

    def manual_seed(self, seed):
        return super().manual_seed(seed + 1000 if self.other else seed)


def _embedded(model, columns: int, E: int) -> torch.Tensor:
    """What `model` adds to (1, 1, columns, E) zero cells: its column embeddings."""
    method = "add_column_embeddings" if hasattr(model, "add_column_embeddings") else "_add_column_embeddings"
    with torch.no_grad():
        return getattr(model, method)(torch.zeros(1, 1, columns, E))


@pytest.mark.parametrize("arch", V2_FAMILY)
def test_a_pinned_model_adds_what_the_stock_model_draws_on_the_cpu_for_every_column_count(arch):
    stock, _ = build_host(arch, TINY_ARCHS[arch], seed=0)
    pinned = pin_drawn(copy.deepcopy(stock), 5)
    E = getattr(stock, LAYER).out_features
    assert draws_on_device(stock) and not draws_on_device(pinned)
    for columns in (1, 2, 3, 5, 6, 9):  # stored (<= 5) and drawn on the CPU above
        assert torch.equal(_embedded(pinned, columns, E), _embedded(stock, columns, E)), columns


@pytest.mark.parametrize("arch", V2_FAMILY)
def test_the_device_generator_moves_the_stock_model_and_not_a_pinned_one(arch, monkeypatch):
    stock, _ = build_host(arch, TINY_ARCHS[arch], seed=0)
    pinned = pin_drawn(copy.deepcopy(stock), 4)
    E = getattr(stock, LAYER).out_features
    here = {c: (_embedded(stock, c, E), _embedded(pinned, c, E)) for c in (3, 7)}
    monkeypatch.setattr(torch, "Generator", OtherDeviceGenerator)
    for columns, (stock_here, pinned_here) in here.items():
        assert not torch.allclose(_embedded(stock, columns, E), stock_here, atol=1e-3)
        assert torch.equal(_embedded(pinned, columns, E), pinned_here)


def test_the_draw_for_k_columns_is_not_a_prefix_of_a_larger_one():
    """Why every column count is stored: an embedding depends on how many columns the table has."""
    assert not torch.equal(cpu_draws(0, 24, 3), cpu_draws(0, 24, 4)[:3])
    table = ColumnEmbeddings.drawn(0, 24, 6)
    assert all(torch.equal(table.for_columns(k), cpu_draws(0, 24, k)) for k in range(1, 9))


def test_the_header_form_round_trips_bit_for_bit():
    table = ColumnEmbeddings.drawn(3, 8, 7)
    back = ColumnEmbeddings.from_header(table.to_header(), "here")
    assert (back.seed, back.max_columns, back.width) == (3, 7, 8)
    assert torch.equal(back.table_TW, table.table_TW)


@pytest.mark.parametrize(
    "field, message",
    [
        ({"seed": 0, "width": 8}, "is not a table of column embeddings"),
        ({"seed": 0, "width": 8, "max_columns": 3, "float32": "not base64!"}, "is not a table of column embeddings"),
        ({"seed": 0, "width": 8, "max_columns": 3, "float32": "AAAA"}, "not the 6 x 8 float32 draws"),
    ],
)
def test_a_broken_table_is_refused_in_one_line(field, message):
    with pytest.raises(RetrofitError, match=message) as err:
        ColumnEmbeddings.from_header(field, "host.safetensors")
    assert "\n" not in str(err.value)


def test_the_shipped_tiny_v2_stores_the_cpu_draws_of_every_column_count_it_trained_on():
    table = stored(get_path("tiny_v2"))
    assert (table.seed, table.width, table.max_columns) == (0, 24, 10)  # 1-20 features in groups of 2
    assert all(torch.equal(table.for_columns(k), cpu_draws(0, 24, k)) for k in range(1, 11))
    assert stored(get_path("tiny_v3")) is None and stored(get_path("tiny_v3_5")) is None


@pytest.mark.parametrize("arch", V2_FAMILY)
def test_a_random_host_carries_its_draws_into_every_fit(arch, tmp_path, monkeypatch):
    path = random_host(arch, tmp_path)
    assert stored(path).max_columns == RANDOM_HOST_COLUMNS
    regressor, X_test = fit_synthetic(path, f=5)
    model = regressor.models_[0]
    assert isinstance(getattr(model, LAYER), StoredColumnEmbedding)
    here = regressor.predict(X_test)
    monkeypatch.setattr(torch, "Generator", OtherDeviceGenerator)
    np.testing.assert_array_equal(fit_synthetic(path, f=5)[0].predict(X_test), here)


def test_the_pin_survives_copies_and_pickling_and_keeps_the_stock_state_dict():
    stock, _ = build_host("tabpfn_v2", TINY_ARCHS["tabpfn_v2"], seed=0)
    pinned = pin_drawn(copy.deepcopy(stock), 3)
    assert list(pinned.state_dict()) == list(stock.state_dict())
    for again in (copy.deepcopy(pinned), pickle.loads(pickle.dumps(pinned))):
        assert torch.equal(carried(again).table_TW, carried(pinned).table_TW)


def test_a_model_that_would_draw_on_its_device_is_not_written(tmp_path):
    model, config = build_host("tabpfn_v2", TINY_ARCHS["tabpfn_v2"], seed=0)
    criterion = set_borders(model, torch.linspace(-4, 4, config.num_buckets + 1))
    with pytest.raises(ValueError, match="pin it to the draws it is trained with first"):
        save_as_published(tmp_path, model, config, "tabpfn_v2", criterion)


def test_a_v2_checkpoint_without_draws_warns_once_naming_the_device(tmp_path, caplog):
    model, config = build_host("tabpfn_v2", TINY_ARCHS["tabpfn_v2"], seed=0)
    criterion = set_borders(model, torch.linspace(-4, 4, config.num_buckets + 1))
    written = save_as_published(tmp_path, pin_drawn(model, 2), config, "tabpfn_v2", criterion)
    checkpoint = torch.load(written, weights_only=True)
    del checkpoint[HEADER_FIELD]  # as tabpfn publishes v2: no draws
    torch.save(checkpoint, written)
    check_checkpoint(written)
    with caplog.at_level(logging.WARNING):
        regressor, _ = fit_synthetic(written)
        fit_synthetic(written)  # a second fit of the same file on the same device: no second line
    lines = [r.getMessage() for r in caplog.records if "column embeddings" in r.getMessage()]
    assert len(lines) == 1 and "draws them on cpu" in lines[0] and "\n" not in lines[0]
    assert draws_on_device(regressor.models_[0])


def test_a_checkpoint_whose_draws_cannot_feed_its_model_is_refused_before_any_fit(tmp_path):
    model, config = build_host("tabpfn_v2", TINY_ARCHS["tabpfn_v2"], seed=0)
    criterion = set_borders(model, torch.linspace(-4, 4, config.num_buckets + 1))
    written = save_as_published(tmp_path, pin_drawn(model, 2), config, "tabpfn_v2", criterion)
    checkpoint = torch.load(written, weights_only=True)
    checkpoint[HEADER_FIELD] = ColumnEmbeddings.drawn(0, 5, 2).to_header()
    torch.save(checkpoint, written)
    with pytest.raises(RetrofitError, match="stored column embeddings have width 5, its model's"):
        check_checkpoint(written)
