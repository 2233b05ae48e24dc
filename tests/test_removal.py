"""retrofit.removal: exact, batched feature and row removal on an o_closed regressor, with no refit
(tiny random tabpfn_v3 host, fast)."""

import copy
import re

import numpy as np
import pytest
import torch
from refusals import one_line

import retrofit
from retrofit.batching import decode_members, member_inputs
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, inference_config, make_regressor
from retrofit.member_columns import _members, member_feature_columns
from retrofit.removal import leave_one_out, row_values, shapley, values

REL_BOUND = 1e-5
"""Without compaction, removal matches its reference to this fraction of the prediction scale."""
N_TRAIN, N_TEST, N_FEATURES = 60, 6, 5
FIXED_ORDER = {"FEATURE_SHIFT_METHOD": None}
"""Feature removal refuses feature shuffling (each member's column order is drawn for the feature count)."""


def _table(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_TRAIN + N_TEST, N_FEATURES))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=len(X))
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


def _closed(path, X_train, y_train, compact=False, **config):
    """The o_closed retrofit of a 2-member regressor on `path` fitted on (X_train, y_train), with the
    inference config entries `config` over the host's stored preset without feature shuffling."""
    fitted = make_regressor(path, n_estimators=2, random_state=0, inference_config={**FIXED_ORDER, **config})
    return retrofit.retrofit(fitted.fit(X_train, y_train), "o_closed", compact=compact)


def _close(a, b, scale, compact):
    if compact:
        return np.array_equal(a, b)
    return float(np.abs(a - b).max()) <= REL_BOUND * scale


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


@pytest.fixture(scope="module")
def case(host):
    X_train, y_train, X_test, y_test = _table()
    return _closed(host, X_train, y_train), X_train, y_train, X_test, y_test


COALITIONS = np.array([[1, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)


def test_full_coalition_is_predict(case):
    regressor, _, _, X_test, _ = case
    full = values(regressor, X_test, np.ones((1, N_FEATURES), dtype=bool))[0]
    reference = regressor.predict(X_test)
    assert np.abs(full - reference).max() <= REL_BOUND * np.abs(reference).max()


def test_batch_bound_changes_nothing_but_the_number_of_forwards(case):
    regressor, _, _, X_test, _ = case
    one_per_forward = values(regressor, X_test, COALITIONS, max_cells=1)
    assert (
        np.abs(one_per_forward - values(regressor, X_test, COALITIONS)).max()
        <= REL_BOUND * np.abs(one_per_forward).max()
    )


@pytest.mark.parametrize("compact", [False, True])
def test_value_ignores_the_features_outside_the_coalition(host, compact):
    X_train, y_train, X_test, _ = _table()
    reference = values(_closed(host, X_train, y_train, compact), X_test, COALITIONS)
    rng = np.random.default_rng(1)
    for k, coalition in enumerate(COALITIONS):
        outside = ~coalition
        X_train_new, X_test_new = X_train.copy(), X_test.copy()
        X_train_new[:, outside] = rng.normal(size=(N_TRAIN, outside.sum())) * 3 + 1
        X_test_new[:, outside] = rng.normal(size=(N_TEST, outside.sum())) * 3 + 1
        # the same coalitions in the same batch layout: only the outside features' values differ
        changed = values(_closed(host, X_train_new, y_train, compact), X_test_new, COALITIONS)[k]
        assert _close(changed, reference[k], np.abs(reference).max(), compact), coalition


@pytest.mark.parametrize("compact", [False, True])
def test_value_is_the_forward_on_the_reduced_table(host, compact):
    X_train, y_train, X_test, _ = _table()
    regressor = _closed(host, X_train, y_train, compact)
    columns = member_feature_columns(regressor)
    got = values(regressor, X_test, COALITIONS[:4])
    for k, coalition in enumerate(COALITIONS[:4]):
        logits = []
        for member, m in zip(member_inputs(0, regressor, X_test), columns, strict=True):
            keep = torch.as_tensor(coalition[m])
            x = member.x_RC[:, keep][:, None]
            with torch.inference_mode():
                logits.append(regressor.models_[0](x, member.y_N[:, None])[:, 0])
        reduced = decode_members(regressor, logits)
        # rounding only: the reduced forward holds one table per call, `values` a batch of them
        assert _close(got[k], reduced, np.abs(reduced).max(), compact=False), coalition


@pytest.mark.parametrize("compact", [False, True])
def test_shared_column_stage_equals_the_whole_forward_per_coalition(host, compact):
    X_train, y_train, X_test, _ = _table()
    regressor = _closed(host, X_train, y_train, compact)
    coalitions = np.random.default_rng(2).random((24, N_FEATURES)) < 0.5
    coalitions = np.concatenate([COALITIONS, coalitions])
    shared = values(regressor, X_test, coalitions)
    whole = values(regressor, X_test, coalitions, share_columns=False)
    # a column token computed once per distinct group and gathered: the same arithmetic per token
    assert _close(shared, whole, np.abs(whole).max(), compact)
    assert np.abs(shared - whole).max() <= REL_BOUND * np.abs(whole).max()


def test_empty_coalition_is_one_value_for_every_query(case):
    regressor, _, y_train, X_test, _ = case
    empty = values(regressor, X_test, np.zeros((1, N_FEATURES), dtype=bool))[0]
    assert np.ptp(empty) <= REL_BOUND * np.abs(empty).max()  # no feature present: the queries are alike
    assert y_train.min() < empty[0] < y_train.max()


def test_refuses_bad_inputs(case, host):
    regressor, X_train, y_train, X_test, _ = case
    with pytest.raises(RetrofitError, match="boolean"):
        values(regressor, X_test, COALITIONS.astype(int))
    with pytest.raises(RetrofitError, match=r"shape \(K >= 1, 5\)"):
        values(regressor, X_test, COALITIONS[:, :4])
    with pytest.raises(RetrofitError, match=r"shape \(K >= 1, 5\)"):
        values(regressor, X_test, COALITIONS[0])
    with pytest.raises(RetrofitError, match="max_cells"):
        values(regressor, X_test, COALITIONS, max_cells=0)
    stock = make_regressor(host, n_estimators=2, random_state=0).fit(X_train, y_train)
    for other in (stock, retrofit.retrofit(stock, "full_o")):
        with pytest.raises(RetrofitError, match="o_closed"):
            values(other, X_test, COALITIONS)


@pytest.mark.parametrize(
    ("config", "step"),
    [
        ({"FINGERPRINT_FEATURE": True}, "AddFingerprintFeaturesStep"),
        ({"POLYNOMIAL_FEATURES": 2}, "NanHandlingPolynomialFeaturesStep"),
        (
            {"FEATURE_SHIFT_METHOD": "shuffle"},
            r"feature shuffling \(FEATURE_SHIFT_METHOD='shuffle'\).*'FEATURE_SHIFT_METHOD': None",
        ),
        ({"FEATURE_SHIFT_METHOD": "rotate"}, r"feature shuffling \(FEATURE_SHIFT_METHOD='rotate'\)"),
    ],
)
def test_refuses_preprocessing_that_mixes_columns_or_depends_on_the_feature_count(host, config, step):
    X_train, y_train, X_test, _ = _table()
    regressor = _closed(host, X_train, y_train, **config)
    with pytest.raises(RetrofitError, match=step):
        values(regressor, X_test, COALITIONS)


def test_refuses_svd_features(host):
    X_train, y_train, X_test, _ = _table()
    fitted = make_regressor(host, n_estimators=2, random_state=0).fit(X_train, y_train)
    preset = fitted.get_inference_config().PREPROCESS_TRANSFORMS[0]
    regressor = _closed(
        host, X_train, y_train, PREPROCESS_TRANSFORMS=[{**vars(preset), "global_transformer_name": "svd"}]
    )
    with pytest.raises(RetrofitError, match=r"AddSVDFeaturesStep.*global_transformer_name=None"):
        values(regressor, X_test, COALITIONS)


def test_one_refusal_names_every_problem_and_one_fix_that_works():
    """tabpfn's v2_5_default preset on the shipped tiny_v3 host (fingerprint on, SVD features in
    one of its two views, feature shuffling) is refused by ONE one-line error naming all three,
    each once with the members it concerns; the inference_config it gives, pasted over the
    preset, fits a regressor whose feature removal works."""
    X_train, y_train, X_test, _ = _table()
    preset = inference_config("v2_5_default")

    def fit(config):
        regressor = make_regressor(get_path("tiny_v3"), n_estimators=4, random_state=0, inference_config=config)
        return retrofit.retrofit(regressor.fit(X_train, y_train), "o_closed")

    with pytest.raises(RetrofitError) as refusal:
        values(fit(preset), X_test, COALITIONS)
    message = str(refusal.value)
    assert "\n" not in message and message.count("feature removal needs") == 1
    assert "every member runs the fingerprint feature (AddFingerprintFeaturesStep)" in message
    assert "every member runs feature shuffling (FEATURE_SHIFT_METHOD='shuffle')" in message
    assert re.search(r"members [0-3](, [0-3])* run SVD features \(AddSVDFeaturesStep\)", message)
    assert [message.count(step) for step in ("Fingerprint", "shuffling", "SVD features")] == [1, 1, 1]
    fix = eval(re.search(r"inference_config=(\{.*\}) \(added", message).group(1), {"retrofit": retrofit})
    lean_views = inference_config("lean")["PREPROCESS_TRANSFORMS"]
    assert fix == {"FINGERPRINT_FEATURE": False, "FEATURE_SHIFT_METHOD": None, "PREPROCESS_TRANSFORMS": lean_views}
    fixed = fit({**preset, **fix})
    full = values(fixed, X_test, np.ones((1, N_FEATURES), dtype=bool))[0]
    reference = fixed.predict(X_test)
    assert np.abs(full - reference).max() <= REL_BOUND * np.abs(reference).max()


@pytest.mark.parametrize(
    ("indices", "said"),
    [
        ([0, 1, 2, 3], "every member runs"),
        ([2], "member 2 runs"),
        ([1, 2, 3], "members 1-3 run"),
        ([0, 2], "members 0, 2 run"),
    ],
)
def test_refusal_says_which_members_once(indices, said):
    assert _members(indices, n_members=4) == said


def test_refuses_count_dependent_categorical_orders_and_layouts(host):
    """Two categorical features under a shuffled ordinal encoding (one stream of category orders, in
    column order) and append_original='auto' that did not append (a narrower refit would) are
    refused naming the setting; 'ordinal' categories and a fixed append_original are accepted."""
    X_train, y_train, X_test, _ = _table()
    X_train, X_test = X_train.copy(), X_test.copy()
    for X in (X_train, X_test):
        X[:, 3:] = np.floor(np.abs(X[:, 3:]) * 2)  # two features of a few categories
    (view,) = inference_config("lean")["PREPROCESS_TRANSFORMS"]

    def refit(**changes):
        config = {**FIXED_ORDER, "PREPROCESS_TRANSFORMS": [{**view, **changes}]}
        fitted = make_regressor(host, n_estimators=2, categorical_features_indices=[3, 4], inference_config=config)
        return retrofit.retrofit(fitted.fit(X_train, y_train), "o_closed")

    fix = re.escape("[{**view, 'categorical_name': 'ordinal'} for view in retrofit.hosts.inference_config('lean')")
    with pytest.raises(RetrofitError, match=rf"shuffled categorical encoding .*categorical_name='ordinal'.*{fix}"):
        values(refit(categorical_name="ordinal_shuffled"), X_test, COALITIONS)
    with pytest.raises(RetrofitError, match=r"append_original='auto'"):
        values(
            refit(categorical_name="ordinal", append_original="auto", max_features_per_estimator=8), X_test, COALITIONS
        )
    assert np.isfinite(values(refit(categorical_name="ordinal"), X_test, COALITIONS)).all()


PRESETS = {
    "lean": lambda host: {"PREPROCESS_TRANSFORMS": inference_config("lean")["PREPROCESS_TRANSFORMS"]},
    "stored_without_svd": lambda host: {
        "PREPROCESS_TRANSFORMS": [
            {**vars(view), "global_transformer_name": None}
            for view in make_regressor(get_path(host)).fit(*_table()[:2]).get_inference_config().PREPROCESS_TRANSFORMS
        ]
    },
}
"""Column-separable presets removal accepts (with FIXED_ORDER): one squashing view; the host's
stored views (tiny_v3_5: quantile and squashing) without their SVD features."""


@pytest.mark.parametrize("host_name", ["tiny_v3", "tiny_v3_5"])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_value_is_an_o_closed_refit_without_the_features_outside_the_coalition(host_name, preset):
    """The removal contract: v(S) equals an o_closed regressor fitted on the table without the
    features outside S (context and queries), preprocessing included, to 1e-5 of the scale."""
    X_train, y_train, X_test, _ = _table()
    config = PRESETS[preset](host_name)
    got = values(_closed(get_path(host_name), X_train, y_train, **config), X_test, COALITIONS[:4])
    for k, coalition in enumerate(COALITIONS[:4]):
        refit = _closed(get_path(host_name), X_train[:, coalition], y_train, **config).predict(X_test[:, coalition])
        assert np.abs(got[k] - refit).max() <= REL_BOUND * np.abs(refit).max(), coalition


def test_shapley_exact_is_efficient_and_matches_the_budgeted_estimate(case):
    regressor, _, _, X_test, _ = case
    phi = shapley(regressor, X_test)
    assert phi.shape == (N_TEST, N_FEATURES)
    ends = values(regressor, X_test, np.array([[True] * N_FEATURES, [False] * N_FEATURES]))
    assert np.abs(phi.sum(axis=1) - (ends[0] - ends[1])).max() <= REL_BOUND * np.abs(ends).max()
    # a budget of every coalition makes KernelSHAP exact too
    estimate = shapley(regressor, X_test, budget=2**N_FEATURES)
    assert np.abs(estimate - phi).max() <= 1e-6 * np.abs(ends).max()
    small = shapley(regressor, X_test, budget=12)
    assert np.abs(small.sum(axis=1) - (ends[0] - ends[1])).max() <= REL_BOUND * np.abs(ends).max()


def test_shapley_with_a_given_empty_prediction(case):
    regressor, _, y_train, X_test, _ = case
    phi = shapley(regressor, X_test, empty_prediction=float(y_train.mean()))
    full = values(regressor, X_test, np.ones((1, N_FEATURES), dtype=bool))[0]
    assert np.abs(phi.sum(axis=1) - (full - y_train.mean())).max() <= REL_BOUND * np.abs(full).max()


def test_k_sii_interactions(case):
    regressor, _, _, X_test, _ = case
    interactions = shapley(regressor, X_test[:2], index="k-SII", max_order=2)
    assert len(interactions) == 2
    pairs = interactions[0].get_n_order_values(2)
    assert pairs.shape == (N_FEATURES, N_FEATURES) and np.abs(pairs).max() > 0
    ends = values(regressor, X_test[:2], np.array([[True] * N_FEATURES, [False] * N_FEATURES]))
    total = sum(v for key, v in interactions[0].dict_values.items() if len(key) > 0)
    assert abs(total - (ends[0, 0] - ends[1, 0])) <= REL_BOUND * np.abs(ends).max()  # k-SII is efficient


def test_shapley_refuses_bad_settings(case):
    regressor, _, _, X_test, _ = case
    with pytest.raises(RetrofitError, match="index"):
        shapley(regressor, X_test, index="Banzhaf")
    with pytest.raises(RetrofitError, match="max_order"):
        shapley(regressor, X_test, index="SV", max_order=2)
    with pytest.raises(RetrofitError, match="budget"):
        shapley(regressor, X_test, budget=1)


def test_all_rows_is_predict_and_a_row_set_is_the_reduced_context(case):
    regressor, _, _, X_test, _ = case
    rows = np.ones((3, N_TRAIN), dtype=bool)
    rows[1, ::2] = False
    rows[2, :50] = False
    got = row_values(regressor, X_test, rows)
    reference = regressor.predict(X_test)
    assert np.abs(got[0] - reference).max() <= REL_BOUND * np.abs(reference).max()
    for k in (1, 2):
        keep = torch.as_tensor(rows[k])
        logits = []
        for member in member_inputs(0, regressor, X_test):
            x = torch.cat([member.x_RC[:N_TRAIN][keep], member.x_RC[N_TRAIN:]])[:, None]
            with torch.inference_mode():
                logits.append(regressor.models_[0](x, member.y_N[keep][:, None])[:, 0])
        reduced = decode_members(regressor, logits)
        assert np.abs(got[k] - reduced).max() <= REL_BOUND * np.abs(reduced).max()


@pytest.mark.parametrize("compact", [False, True])
def test_absent_rows_values_change_nothing(host, compact):
    X_train, y_train, X_test, _ = _table()
    regressor = _closed(host, X_train, y_train, compact)
    rows = np.ones((1, N_TRAIN), dtype=bool)
    rows[0, [3, 17, 40]] = False
    reference = row_values(regressor, X_test, rows)
    changed = copy.deepcopy(regressor)
    for member in changed.executor_.ensemble_members:
        member.X_train[~rows[0]] = 1e3
        member.y_train[~rows[0]] = -1e3
    assert _close(row_values(changed, X_test, rows), reference, np.abs(reference).max(), compact)


def test_leave_one_out(case):
    regressor, _, _, X_test, y_test = case
    loo = leave_one_out(regressor, X_test, y_test)
    assert loo.shape == (N_TRAIN,)
    for i in (0, 31):
        rows = np.ones((1, N_TRAIN), dtype=bool)
        rows[0, i] = False
        without = row_values(regressor, X_test, rows)[0]
        loss = lambda p: float(((p - y_test) ** 2).mean())  # noqa: E731
        assert abs(loo[i] - (loss(without) - loss(regressor.predict(X_test)))) <= 1e-5 * loss(without)
    assert np.abs(loo).max() > 0
    with pytest.raises(RetrofitError, match="at least one present"):
        row_values(regressor, X_test, np.zeros((1, N_TRAIN), dtype=bool))


@pytest.mark.slow
def test_explain_bench_small(tmp_path):
    from pathlib import Path

    from omegaconf import OmegaConf

    from benchmarks.removal_vs_refit.explain_table import COLUMNS, LOO_METHODS, METHODS, run
    from retrofit.data import DatasetSpec
    from retrofit.removal.stages import CLOSED_STAGES, REFIT_STAGES

    root = Path(__file__).resolve().parents[1]
    auto = DatasetSpec.from_mapping(OmegaConf.to_container(OmegaConf.load(root / "configs" / "dataset" / "auto.yaml")))

    cfg = OmegaConf.create(
        dict(
            datasets=["auto"],
            max_train_rows=30,
            exact_max_features=0,
            budget=8,
            repeats=2,
            n_loo_queries=4,
            output=str(tmp_path / "bench.csv"),
            plot=str(tmp_path / "bench.png"),
            example_plot=str(tmp_path / "example.png"),
            stages_output=str(tmp_path / "stages.csv"),
            n_stage_coalitions=4,
            example_dataset="auto",
            n_explain_batched=3,
        )
    )
    table, explained = run(cfg, [auto], root)
    assert tuple(table.columns) == COLUMNS
    assert [(item.host, item.dataset) for item in explained] == [("tiny_v3", "auto"), ("tiny_v3_5", "auto")]
    for _, rows in table.groupby("host", sort=False):
        assert list(zip(rows["index"], rows.method, strict=True)) == [
            *[("SV", m) for m in METHODS],
            *[("k-SII", m) for m in METHODS],
            *[("LOO", m) for m in LOO_METHODS],
        ]
    for reference in ("refit_shapiq", "refit_tabpfn"):
        refit = table[table.method == reference]
        assert (refit.speedup_vs_refit == 1).all() and (refit.max_abs_diff_vs_refit == 0).all()
    assert table[table["index"] != "LOO"].n_coalitions.eq(8).all()
    assert table.rounds.eq(np.where(table.method == "stock_zeroed", 1, 2)).all()  # the zeroed arm runs once
    assert table[table["index"] == "LOO"].n_coalitions.eq(31).all()
    for item in explained:
        # both sides share v(∅), and v(all) is the prediction of the closed vs the stock host (equal to rounding)
        phi = item.attributions
        reference = phi["SV", "refit_shapiq"]
        assert abs(phi["SV", "closed_batched"].sum() - reference.sum()) <= 1e-4 * np.abs(reference).sum()
        d = len(item.feature_names)
        assert phi["k-SII", "closed_batched"].shape == (1, d + d * (d - 1) // 2)
        assert phi["LOO", "closed_batched"].shape == phi["LOO", "refit_tabpfn"].shape == (1, 30)
    assert all((tmp_path / name).is_file() for name in ("bench.csv", "bench.png", "example.png", "stages.csv"))
    stages = explained[1].stages
    for method, parts in (("closed_batched", CLOSED_STAGES[:-1]), ("refit_shapiq", REFIT_STAGES[:-1])):
        # nested CPU clocks: no stage is negative and every timed one took time
        assert all(stages[method, part] >= 0 for part in parts) and stages[method, parts[0]] > 0
    # feature shuffling would make removal differ from a refit: the removal refuses it, naming the key
    with pytest.raises(RetrofitError, match=r"FEATURE_SHIFT_METHOD='shuffle'"):
        run(OmegaConf.merge(cfg, {"feature_shift_method": "shuffle", "hosts": ["tiny_v3"]}), [auto], root)
    with pytest.raises(RetrofitError, match="inference_preset: unknown inference preset 'leen'"):
        run(OmegaConf.merge(cfg, {"inference_preset": "leen"}), [auto], root)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_leave_one_out_refuses_a_query_row_without_a_finite_target(tiny_v3_fitted, bad):
    """A NaN in y made every value NaN, with no message."""
    closed, X_test, y_test = (
        retrofit.retrofit(tiny_v3_fitted[0], "o_closed"),
        tiny_v3_fitted[1][:4],
        tiny_v3_fitted[2][:4].copy(),
    )
    y_test[2] = bad
    with pytest.raises(RetrofitError, match=f"y of query row 2 is {bad}") as err:
        leave_one_out(closed, X_test, y_test)
    one_line(err)
