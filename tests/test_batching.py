"""`retrofit.predict_many`: padded, mask-free batches of o_closed regressors equal their own predict."""

import copy
import functools

import numpy as np
import pytest
import torch
from devices import DEVICES
from refusals import one_line

import retrofit
from retrofit.batching import MAX_PADDING, MemberInput, bucket_members, cell_limit, pad_members, shared_buckets
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor

SHAPES = [(60, 20, 5), (40, 13, 3), (80, 7, 8), (33, 30, 5)]
"""(train rows, test rows, features) of the tables: all different."""


@functools.cache
def _stock_tables(path, n_estimators, device) -> tuple:
    """One stock regressor fitted per table of `SHAPES` on `device`, with its test rows; fitted once per
    run for each (path, n_estimators, device): `retrofit` copies what it patches, so no test changes them."""
    rng = np.random.default_rng(0)
    pairs = []
    for i, (n, t, c) in enumerate(SHAPES):
        X = rng.normal(size=(n + t, c))
        y = (i + 1) * X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=n + t) + 10 * i
        regressor = make_regressor(path, n_estimators=n_estimators, random_state=i, device=device).fit(X[:n], y[:n])
        pairs.append((regressor, X[n:]))
    return tuple(pairs)


def _tables(path, variant="o_closed", n_estimators=2, device="cpu", **hparams):
    """One fitted, retrofitted regressor per table of `SHAPES` on `device`, with its test rows."""
    return [
        (retrofit.retrofit(regressor, variant, **hparams), X)
        for regressor, X in _stock_tables(path, n_estimators, device)
    ]


@pytest.fixture(scope="module")
def random_v3_path(make_random_host):
    return make_random_host("tabpfn_v3")


def test_predict_many_by_default_is_each_tables_own_predict_and_shares_no_forward(random_v3_path, monkeypatch):
    """Shared forwards are opt-in (`max_padding`): by default every table runs its own predict,
    bitwise a loop, and no padded forward runs; `max_cells` alone is refused."""
    pairs = _tables(random_v3_path, compact=False)

    def no_shared_forward(*_args):
        raise AssertionError("a shared forward ran without max_padding")

    monkeypatch.setattr("retrofit.batching._forward_bucket", no_shared_forward)
    for (regressor, X_test), predicted in zip(pairs, retrofit.predict_many(pairs), strict=True):
        np.testing.assert_array_equal(predicted, regressor.predict(X_test))
    with pytest.raises(RetrofitError, match="max_cells bounds shared forwards, which need a max_padding"):
        retrofit.predict_many(pairs, max_cells=1000)


def test_predict_many_refuses_tables_whose_summed_work_is_over_the_bound_before_any_runs(random_v3_path, monkeypatch):
    """The work of the `SHAPES` tables is 60·80·5 + 40·53·3 + 80·87·8 + 33·63·5 = 96,435 units (fitted rows ×
    their rows and the test rows × features, summed, as `RetrofitRegressor.predict` counts one): one unit
    under it refuses in one line before any table is predicted, at it every table runs."""
    pairs = _tables(random_v3_path, compact=False)
    monkeypatch.setenv("RETROFIT_MAX_WORK", "96434")
    with monkeypatch.context() as patched:
        patched.setattr(type(pairs[0][0]), "predict", lambda *_: pytest.fail("predicted before the check"))
        with pytest.raises(RetrofitError) as refused:
            retrofit.predict_many(pairs)
    message = one_line(refused)
    assert message.startswith("predict_many: 4 tables are 9.6e+04 units of work")
    assert "over the bound of 9.6e+04 (RETROFIT_MAX_WORK)" in message and "RETROFIT_MAX_WORK=96435" in message
    monkeypatch.setenv("RETROFIT_MAX_WORK", "96435")
    assert [len(p) for p in retrofit.predict_many(pairs)] == [20, 13, 7, 30]


@pytest.mark.parametrize(
    "bounds, message",
    [
        ({"max_padding": 0.5}, "max_padding must be a finite number >= 1"),
        ({"max_padding": "1.5"}, "max_padding must be a finite number >= 1"),
        ({"max_padding": True}, "max_padding must be a finite number >= 1"),
        ({"max_padding": float("nan")}, "max_padding must be a finite number >= 1"),
        ({"max_padding": 1.5, "max_cells": 0}, "max_cells must be an int >= 1"),
        ({"max_padding": 1.5, "max_cells": "x"}, "max_cells must be an int >= 1"),
    ],
)
def test_predict_many_refuses_bounds_that_are_not_numbers_in_range(random_v3_path, bounds, message, monkeypatch):
    pairs = _tables(random_v3_path, compact=False)
    monkeypatch.setattr("retrofit.batching.member_inputs", lambda *_: pytest.fail("preprocessed before the check"))
    with pytest.raises(RetrofitError, match=message):
        retrofit.predict_many(pairs, **bounds)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("max_padding", [1.5, 100.0])  # several buckets; everything in one
def test_predict_many_equals_each_regressors_predict(random_v3_path, compact, max_padding, device):
    pairs = _tables(random_v3_path, compact=compact, device=device)
    many = retrofit.predict_many(pairs, max_padding=max_padding)
    for (regressor, X_test), predicted in zip(pairs, many, strict=True):
        own = regressor.predict(X_test)
        assert predicted.shape == own.shape
        if compact:
            np.testing.assert_array_equal(predicted, own)
        else:
            assert np.max(np.abs(predicted - own)) <= 1e-5 * np.max(np.abs(own))


def test_predict_many_refuses_a_regressor_that_is_not_o_closed(random_v3_path):
    pairs = _tables(random_v3_path)
    full_o = retrofit.retrofit(retrofit.unpatch(copy.deepcopy(pairs[1][0])), "full_o")
    with pytest.raises(RetrofitError, match="pair 1 holds variant 'full_o', not an o_closed one"):
        retrofit.predict_many([pairs[0], (full_o, pairs[1][1])])
    stock = retrofit.unpatch(copy.deepcopy(pairs[1][0]))
    with pytest.raises(RetrofitError, match="pair 1 holds a stock TabPFNRegressor"):
        retrofit.predict_many([pairs[0], (stock, pairs[1][1])])


def test_predict_many_refuses_different_checkpoints(random_v3_path, make_random_host):
    pairs = _tables(random_v3_path)
    other = _tables(make_random_host("tabpfn_v3", seed=1))
    with pytest.raises(RetrofitError, match="different checkpoints"):
        retrofit.predict_many([pairs[0], other[1]])


def test_predict_many_refuses_a_mix_of_devices(random_v3_path):
    pairs = _tables(random_v3_path)
    moved = copy.deepcopy(pairs[1][0])
    moved.devices_ = (torch.device("meta"),)  # a second device, as far as the check is concerned
    with pytest.raises(RetrofitError, match="different devices"):
        retrofit.predict_many([pairs[0], (moved, pairs[1][1])])


def test_predict_many_refuses_nothing_to_predict():
    with pytest.raises(RetrofitError, match="at least one"):
        retrofit.predict_many([])


def _member(n, t, c, pair=0):
    return MemberInput(pair, 0, torch.randn(n + t, c), torch.randn(n))


def test_buckets_bound_the_padding_and_the_cells():
    members = [
        _member(n, t, c, i)
        for i, (n, t, c) in enumerate(
            [(3000, 900, 10), (300, 100, 10), (280, 90, 9), (250, 80, 12), (20, 5, 3), (2900, 950, 10)]
        )
    ]
    buckets = bucket_members(members, max_padding=1.5, max_cells=10**9)
    assert sorted(m.pair for bucket in buckets for m in bucket) == list(range(6))
    for bucket in buckets:
        N, T, C = (max(m.shape[i] for m in bucket) for i in range(3))
        cells = sum((m.shape[0] + m.shape[1]) * m.shape[2] for m in bucket)
        pairs = sum((m.shape[0] + m.shape[1]) * m.shape[0] for m in bucket)  # in-context attention
        assert len(bucket) * (N + T) * C <= 1.5 * cells and len(bucket) * (N + T) * N <= 1.5 * pairs
    assert [sorted(m.pair for m in bucket) for bucket in buckets] == [[0, 5], [1, 2, 3], [4]]
    tight = bucket_members(members, max_padding=100.0, max_cells=50_000)
    assert all(
        len(b) * max(m.shape[0] + m.shape[1] for m in b) * max(m.shape[2] for m in b) <= 50_000
        for b in tight
        if len(b) > 1
    )


def test_padding_layout_puts_train_rows_first_and_test_rows_after_the_longest_train_block():
    a, b = _member(3, 2, 2), _member(5, 1, 3)
    padded = pad_members([a, b])
    x, y, p_BR, p_BC = padded["x"], padded["y"], padded["row_presence"], padded["column_presence"]
    assert x.shape == (7, 2, 3) and y.shape == (5, 2)
    assert torch.equal(x[:3, 0, :2], a.x_RC[:3]) and torch.equal(x[5:7, 0, :2], a.x_RC[3:])
    assert torch.equal(p_BR[0], torch.tensor([1.0, 1, 1, 0, 0, 1, 1]))
    assert torch.equal(p_BC[0], torch.tensor([1.0, 1, 0]))
    assert torch.all(x[3:5, 0] == 0) and torch.all(x[:, 0, 2] == 0) and torch.all(y[3:, 0] == 0)


@pytest.mark.slow
@pytest.mark.parametrize("compact", [False, True])
def test_tiny_v3_predict_many_equals_each_regressors_predict(compact):
    pairs = _tables(get_path("tiny_v3"), n_estimators=4, compact=compact)
    for (regressor, X_test), predicted in zip(
        pairs, retrofit.predict_many(pairs, max_padding=MAX_PADDING), strict=True
    ):
        own = regressor.predict(X_test)
        if compact:
            np.testing.assert_array_equal(predicted, own)
        else:
            assert np.max(np.abs(predicted - own)) <= 1e-5 * np.max(np.abs(own))


def test_compact_attention_of_an_element_does_not_depend_on_its_batch_mates():
    """What makes predict_many bitwise with compact: elements with different present counts are
    not padded to each other's length (CPU kernels round differently for different lengths)."""
    from retrofit.ops import o_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 40, 16, generator=g) for _ in range(3))
    p_q, p_k = torch.ones(3, 40), torch.ones(3, 40)
    p_q[1, 25:], p_k[1, 30:], p_k[2, 7:] = 0, 0, 0  # three different present counts
    together = o_attention(q, k, v, p_q, p_k, compact=True)
    for b in range(3):
        alone = o_attention(q[b : b + 1], k[b : b + 1], v[b : b + 1], p_q[b : b + 1], p_k[b : b + 1], compact=True)
        assert torch.equal(together[b : b + 1], alone)


def test_predict_many_takes_retrofit_regressors(random_v3_path):
    from retrofit import RetrofitRegressor

    rng = np.random.default_rng(1)
    pairs = []
    for n, c in [(50, 4), (30, 6)]:
        X = rng.normal(size=(n + 10, c))
        estimator = RetrofitRegressor("o_closed", model_path=str(random_v3_path), n_estimators=2, random_state=0)
        pairs.append((estimator.fit(X[:n], X[:n, 0]), X[n:]))
    for (estimator, X_test), predicted in zip(
        pairs, retrofit.predict_many(pairs, max_padding=MAX_PADDING), strict=True
    ):
        assert np.max(np.abs(predicted - estimator.predict(X_test))) <= 1e-5 * np.max(np.abs(predicted))


def test_shared_buckets_leave_out_a_table_that_shares_no_bucket_and_bound_the_cells():
    """Tables 0 and 1 share a bucket of two equal shapes; table 1's other member, alone in its
    bucket, runs with it; table 2 shares no bucket (its padding to table 1's shape would be 1.9x
    its work), so it is left out to run its own predict."""
    members = [_member(300, 100, 9, 0), _member(300, 100, 9, 1), _member(20, 5, 30, 1), _member(20, 4, 2, 2)]
    for max_padding in (1.0, 1.5):  # equal shapes add no padded work: they share even at 1.0
        buckets = shared_buckets(members, max_padding=max_padding, max_cells=10**9)
        assert [[(m.pair, m.shape) for m in bucket] for bucket in buckets] == [
            [(0, (300, 100, 9)), (1, (300, 100, 9))],
            [(1, (20, 5, 30))],
        ]
    assert shared_buckets(members, max_cells=400 * 9) == []  # two of the large shapes exceed the cells
    assert shared_buckets(members, max_padding=100.0, max_cells=10**9) == [members[:3] + members[3:]]


def test_predict_many_equals_predict_whichever_tables_it_batches(random_v3_path):
    """The tables that share buckets (none, some, all, by the padding and cell bounds) predict what
    their own predict does up to rounding; the others are their own predict, bitwise."""
    pairs = _tables(random_v3_path)
    members = [m for i, (r, X) in enumerate(pairs) for m in retrofit.batching.member_inputs(i, r, X)]
    largest = max((m.shape[0] + m.shape[1]) * m.shape[2] for m in members)
    chosen = {}
    for max_padding, max_cells in ((1.0, None), (1.5, None), (100.0, 2 * largest), (100.0, 10**9)):
        limit = cell_limit(pairs[0][0]) if max_cells is None else max_cells
        buckets = shared_buckets(members, max_padding=max_padding, max_cells=limit)
        chosen[frozenset(m.pair for bucket in buckets for m in bucket)] = (max_padding, max_cells)
    assert frozenset() in chosen and frozenset(range(len(pairs))) in chosen and len(chosen) >= 3  # none, some, all
    for tables, (max_padding, max_cells) in chosen.items():
        many = retrofit.predict_many(pairs, max_padding=max_padding, max_cells=max_cells)
        for index, ((regressor, X_test), predicted) in enumerate(zip(pairs, many, strict=True)):
            own = regressor.predict(X_test)
            if index in tables:
                assert np.max(np.abs(predicted - own)) <= 1e-5 * np.max(np.abs(own))
            else:
                np.testing.assert_array_equal(predicted, own)  # its own predict


def test_the_cell_bound_follows_the_models_embedding_width(random_v3_path, make_random_host):
    """One float32 activation of a bucket's cell tokens fits MAX_ACTIVATION_BYTES: the tiny v3.5
    host, half as wide as the tiny v3 one, gets twice the cells."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    fitted = [
        make_regressor(path, n_estimators=1).fit(X, X[:, 0])
        for path in (random_v3_path, make_random_host("tabpfn_v3_5"))
    ]
    widths = [r.models_[0].column_aggregator.embed_dim for r in fitted]
    assert widths[0] == 2 * widths[1]
    assert cell_limit(fitted[1]) == 2 * cell_limit(fitted[0])
    for regressor, width in zip(fitted, widths, strict=True):
        assert cell_limit(regressor) * width * 4 <= retrofit.batching.MAX_ACTIVATION_BYTES


def test_predict_many_given_a_bare_regressor_says_it_wants_pairs(tiny_v3_fitted):
    patched, X_test = retrofit.retrofit(tiny_v3_fitted[0], "o_closed"), tiny_v3_fitted[1]
    with pytest.raises(RetrofitError, match=r"item 0 is a PatchedTabPFNRegressor, not a \(regressor, X_test\) pair"):
        retrofit.predict_many([patched])
    with pytest.raises(RetrofitError, match=r"item 0 is a PatchedTabPFNRegressor"):
        retrofit.predict_many((patched, X_test))
    with pytest.raises(RetrofitError, match=r"pair 0 starts with a ndarray, not a fitted regressor"):
        retrofit.predict_many([(X_test, patched)])
    assert retrofit.predict_many([(patched, X_test)])[0].shape == (20,)


def test_predict_many_takes_a_generator_of_pairs(tiny_v3_fitted):
    """A generator ended in an IndexError inside the batching."""
    closed, X_test = retrofit.retrofit(tiny_v3_fitted[0], "o_closed"), tiny_v3_fitted[1]
    listed = retrofit.predict_many([(closed, X_test), (closed, X_test[:7])])
    generated = retrofit.predict_many((closed, X) for X in (X_test, X_test[:7]))
    for a, b in zip(listed, generated, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RetrofitError, match=r"takes an iterable of \(regressor, X_test\) pairs, got a dict") as err:
        retrofit.predict_many({closed: X_test})
    one_line(err)
