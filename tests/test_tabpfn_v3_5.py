"""`retrofit.adapters.tabpfn_v3_5`: its in-context block wrapper (what v3's refuses, what the
estimator runs), its in-context ECDF ranks among the present train rows only (`o_ecdf_ranks`), and
the payoffs of closure, `predict_many` and `retrofit.removal`, meeting on v3.5 the contracts they
meet on v3 (fast on a tiny random host, slow on the shipped tiny_v3_5). The whole-model closure
itself is tested with v3's in test_tabpfn_v3.py."""

import numpy as np
import pytest
import torch
from synthetic import fit_synthetic, regression_data

import retrofit
from retrofit.adapters import AttentionSettings, TauRule, in_context_blocks
from retrofit.adapters.tabpfn_v3 import OICLBlockV3
from retrofit.adapters.tabpfn_v3_5 import o_ecdf_ranks
from retrofit.batching import cell_limit, member_inputs, shared_buckets
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, inference_config, make_regressor
from retrofit.ops.insertion import insert_rows, random_keep_mask
from retrofit.removal import leave_one_out, values
from retrofit.tabpfn_internals import ecdf_context, in_context_ecdf

REL_BOUND = 1e-5
"""Without compaction, a payoff matches its reference to this fraction of the prediction scale."""

T, C = 9, 3
NUM_BUCKETS = 8
"""Fewer bucket edges than train rows: ranks between edges are interpolated, as on a tall table."""


def _table(num_train, seed):
    """(1, R, C) cells with ties (rounded to 0.5) and the host's ranks against its train rows."""
    generator = torch.Generator().manual_seed(seed)
    x_BRC = (torch.randn(1, num_train + T, C, generator=generator) * 2).round() / 2
    return x_BRC, in_context_ecdf(x_BRC, ecdf_context(x_BRC, num_train, NUM_BUCKETS))


@pytest.mark.parametrize("seed", [0, 1])
def test_everything_present_gives_the_hosts_ranks(seed):
    x_BRC, host_BRC = _table(40, seed)
    ranks_BRC = o_ecdf_ranks(x_BRC, torch.ones(1, 40 + T), torch.ones(1, C), 40, NUM_BUCKETS)
    assert torch.equal(ranks_BRC, host_BRC)


def test_absent_rows_and_columns_change_no_rank_of_a_present_cell():
    """Two tables of 40 and 33 train rows padded to 45 train and T + 2 test rows and one more
    column, absent cells holding NaN: each table's present cells get bitwise its own ranks (which
    ranking against the padded rows would move), every absent cell 0."""
    g = torch.Generator().manual_seed(0)
    old_C = torch.tensor([True, False, True, True])
    padded, keeps, hosts = [], [], []
    for seed, num_train in enumerate((40, 33)):
        x_BRC, host_BRC = _table(num_train, seed)
        keep_R = torch.cat([random_keep_mask(num_train, 45 - num_train, g), random_keep_mask(T, 2, g)])
        padded.append(insert_rows(insert_rows(x_BRC, keep_R, dim=1, fill=float("nan")), old_C, dim=2, fill=0.0))
        keeps.append(keep_R)
        hosts.append(host_BRC[0])
    x_BRC, p_BR = torch.cat(padded).nan_to_num(0.0), torch.stack(keeps).float()
    ranks_BRC = o_ecdf_ranks(x_BRC, p_BR, old_C.float().expand(2, -1), 45, NUM_BUCKETS)
    for b, keep_R in enumerate(keeps):
        assert torch.equal(ranks_BRC[b][keep_R][:, old_C], hosts[b])
        assert torch.all(ranks_BRC[b][~keep_R] == 0) and torch.all(ranks_BRC[b][:, ~old_C] == 0)
    stock_BRC = in_context_ecdf(x_BRC, ecdf_context(x_BRC, 45, NUM_BUCKETS))
    assert not torch.equal(stock_BRC[0][keeps[0]][:, old_C], hosts[0])


SHAPES = [(60, 20, 5), (40, 13, 3), (80, 7, 8), (33, 30, 5)]
"""(train rows, test rows, features) of the predict_many tables: all different."""


def _tables(path, compact, **overrides):
    """One fitted o_closed regressor (2 members) per table of `SHAPES`, with its test rows."""
    rng = np.random.default_rng(0)
    pairs = []
    for i, (n, t, c) in enumerate(SHAPES):
        X = rng.normal(size=(n + t, c))
        y = (i + 1) * X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=n + t) + 10 * i
        regressor = make_regressor(path, n_estimators=2, random_state=i, **overrides).fit(X[:n], y[:n])
        pairs.append((retrofit.retrofit(regressor, "o_closed", compact=compact), X[n:]))
    return pairs


def _close(a, b, compact):
    if compact:
        return np.array_equal(a, b)
    return float(np.abs(a - b).max()) <= REL_BOUND * float(np.abs(b).max())


def _check_predict_many(path, compact):
    """Every table runs in a padded shared forward (no padding bound) and predicts what its own
    predict does: to 1e-5 of the scale, bitwise with compact."""
    pairs = _tables(path, compact)
    members = [m for i, (regressor, X) in enumerate(pairs) for m in member_inputs(i, regressor, X)]
    buckets = shared_buckets(members, max_padding=100.0, max_cells=cell_limit(pairs[0][0]))
    assert {m.pair for bucket in buckets for m in bucket} == set(range(len(SHAPES)))
    many = retrofit.predict_many(pairs, max_padding=100.0)
    for (regressor, X_test), predicted in zip(pairs, many, strict=True):
        assert _close(predicted, regressor.predict(X_test), compact)


@pytest.mark.parametrize("host", ["random", pytest.param("tiny_v3_5", marks=pytest.mark.slow)])
@pytest.mark.parametrize("compact", [False, True])
def test_predict_many_equals_each_regressors_predict(host, compact, make_random_host):
    _check_predict_many(make_random_host("tabpfn_v3_5") if host == "random" else get_path(host), compact)


COALITIONS = np.array([[1, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
N_TRAIN = 60


def _removal_table(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_TRAIN + 6, COALITIONS.shape[1]))
    return X, X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=len(X))


def _check_removal(path, compact, **config):
    """The full coalition is predict; a coalition's value does not move when the features outside it
    take other values in the context and the queries (bitwise with compact); leave-one-out runs.
    `config`: inference config entries over the stored preset, which runs without feature shuffling
    (feature removal refuses it: each member's column order is drawn for the feature count)."""
    overrides = {"inference_config": {**config, "FEATURE_SHIFT_METHOD": None}}

    def closed(X, y):
        fitted = make_regressor(path, n_estimators=2, random_state=0, **overrides).fit(X[:N_TRAIN], y[:N_TRAIN])
        return retrofit.retrofit(fitted, "o_closed", compact=compact)

    X, y = _removal_table(0)
    regressor = closed(X, y)
    reference = values(regressor, X[N_TRAIN:], COALITIONS)
    predicted = regressor.predict(X[N_TRAIN:])
    assert np.abs(reference[2] - predicted).max() <= REL_BOUND * np.abs(predicted).max()
    rng = np.random.default_rng(1)
    for k, coalition in enumerate(COALITIONS):
        X_new = X.copy()
        X_new[:, ~coalition] = rng.normal(size=(len(X), (~coalition).sum())) * 3 + 1
        changed = values(closed(X_new, y), X_new[N_TRAIN:], COALITIONS)[k]
        assert _close(changed, reference[k], compact), coalition
    loo = leave_one_out(regressor, X[N_TRAIN:], y[N_TRAIN:])
    assert loo.shape == (N_TRAIN,) and np.isfinite(loo).all() and np.abs(loo).max() > 0


@pytest.mark.slow
@pytest.mark.parametrize("compact", [False, True])
def test_removal_meets_its_contracts(make_random_host, compact):
    _check_removal(make_random_host("tabpfn_v3_5"), compact)


@pytest.mark.slow
@pytest.mark.parametrize("compact", [False, True])
def test_tiny_v3_5_removal_meets_its_contracts_under_a_column_separable_preset(compact):
    """tiny_v3_5 refitted with the 'lean' preset (one squashing-scaler view, no SVD features, no
    fingerprint) meets the removal contracts; a preset that hashes whole rows (tabpfn's v2.5
    defaults, fingerprint on) is refused by feature removal naming that step."""
    _check_removal(get_path("tiny_v3_5"), compact, **inference_config("lean"))
    X, y = _removal_table(0)
    fitted = make_regressor(
        get_path("tiny_v3_5"), n_estimators=2, random_state=0, inference_config=inference_config("v2_5_default")
    ).fit(X[:N_TRAIN], y[:N_TRAIN])
    with pytest.raises(RetrofitError, match=r"AddFingerprintFeaturesStep"):
        values(retrofit.retrofit(fitted, "o_closed"), X[N_TRAIN:], COALITIONS)


def test_the_v3_wrapper_refuses_a_v3_5_block_naming_its_query_and_key_norms(fitted):
    """v3.5's in-context attention normalises queries and keys per head; v3's wrapper reads
    neither, so running it there would compute another map: it must refuse, by name."""
    regressor, _ = fitted("tabpfn_v3_5")
    block = in_context_blocks(regressor.models_[0])[0]
    message = r"holds \['icl_attention.q_norm', 'icl_attention.k_norm'\].*update the spec and wrapper"
    with pytest.raises(RetrofitError, match=message):
        OICLBlockV3(block, frozenset({"attention"}), TauRule("calibrated", c=1e-3), AttentionSettings(1e-6))


def test_retrofit_regressor_runs_full_o_on_a_v3_5_host(fitted):
    """`RetrofitRegressor` on a v3.5 checkpoint predicts what retrofitting the stock fit predicts."""
    regressor, X_test = fitted("tabpfn_v3_5")
    X, y = regression_data(n=80)
    path = regressor.model_path
    estimator = retrofit.RetrofitRegressor("full_o", model_path=path, n_estimators=1, random_state=0, device="cpu").fit(
        X[:60], y[:60]
    )
    assert estimator.regressor_.retrofit_report_.architectures == ("tabpfn_v3_5",)
    np.testing.assert_array_equal(estimator.predict(X_test), retrofit.retrofit(regressor, "full_o").predict(X_test))


def test_v3_5_o_closed_runs_through_the_estimator(make_random_host):
    """RetrofitRegressor("o_closed") fits and predicts on a v3.5 host: its predictions are those of
    the same stock regressor retrofitted."""
    path = make_random_host("tabpfn_v3_5")
    regressor, X_test = fit_synthetic(path, n_estimators=1, f=5)
    X, y = regression_data(0, 90, 5, curved=True)
    estimator = retrofit.RetrofitRegressor("o_closed", model_path=str(path), n_estimators=1, random_state=0)
    predicted = estimator.fit(X[:60], y[:60]).predict(X_test)
    np.testing.assert_array_equal(predicted, retrofit.retrofit(regressor, "o_closed").predict(X_test))
