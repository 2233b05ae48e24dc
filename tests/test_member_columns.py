"""`retrofit.member_columns`: the raw feature of each member column, and the one-line refusal of
preprocessing that mixes columns or depends on the feature count, with the fix (tiny hosts)."""

import re

import numpy as np
import pytest
from refusals import one_line
from synthetic import (
    CATEGORICAL,
    COALITIONS,
    FIXED_ORDER,
    N_FEATURES,
    REMOVAL_REL_BOUND,
    categorical_table,
    closed_fit,
    removal_table,
)

import retrofit
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, inference_config, make_regressor
from retrofit.member_columns import _members, fixed_orders
from retrofit.removal import values


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
    X_train, y_train, X_test, _ = removal_table()
    regressor = closed_fit(host, X_train, y_train, **config)
    with pytest.raises(RetrofitError, match=step):
        values(regressor, X_test, COALITIONS)


def test_refuses_svd_features(host):
    X_train, y_train, X_test, _ = removal_table()
    fitted = make_regressor(host, n_estimators=2, random_state=0).fit(X_train, y_train)
    preset = fitted.get_inference_config().PREPROCESS_TRANSFORMS[0]
    regressor = closed_fit(
        host, X_train, y_train, PREPROCESS_TRANSFORMS=[{**vars(preset), "global_transformer_name": "svd"}]
    )
    with pytest.raises(RetrofitError, match=r"AddSVDFeaturesStep.*global_transformer_name=None"):
        values(regressor, X_test, COALITIONS)


def test_one_refusal_names_every_problem_and_one_fix_that_works():
    """tabpfn's v2_5_default preset on the shipped tiny_v3 host (fingerprint on, SVD features in
    one of its two views, feature shuffling) is refused by ONE one-line error naming all three,
    each once with the members it concerns; the inference_config it gives, pasted over the
    preset, fits a regressor whose feature removal works."""
    X_train, y_train, X_test, _ = removal_table()
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
    assert np.abs(full - reference).max() <= REMOVAL_REL_BOUND * np.abs(reference).max()


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
    refused in one sentence naming the setting; 'ordinal' categories and a fixed append_original
    are accepted."""
    X_train, y_train, X_test, _ = categorical_table()
    (view,) = inference_config("lean")["PREPROCESS_TRANSFORMS"]

    def refit(**changes):
        config = {**FIXED_ORDER, "PREPROCESS_TRANSFORMS": [{**view, **changes}]}
        fitted = make_regressor(host, n_estimators=2, categorical_features_indices=CATEGORICAL, inference_config=config)
        return retrofit.retrofit(fitted.fit(X_train, y_train), "o_closed")

    fix = re.escape("[{**view, 'categorical_name': 'ordinal'} for view in retrofit.hosts.inference_config('lean')")
    with pytest.raises(
        RetrofitError, match=rf"shuffled categorical encoding .*categorical_name='ordinal'.*{fix}"
    ) as err:
        values(refit(categorical_name="ordinal_shuffled"), X_test, COALITIONS)
    assert not re.search(r"\.(\s|$)", one_line(err))  # one sentence
    with pytest.raises(RetrofitError, match=r"append_original='auto'"):
        values(
            refit(categorical_name="ordinal", append_original="auto", max_features_per_estimator=8), X_test, COALITIONS
        )
    assert np.isfinite(values(refit(categorical_name="ordinal"), X_test, COALITIONS)).all()


def test_fixed_orders_make_removal_a_refit_with_several_categorical_features():
    """tiny_v3's stored preset shuffles categories, one stream of draws in column order: with two
    categorical features removal refuses it, and with fixed_orders over it (what retrofit.explain
    fits with) each coalition's value equals an o_closed refit on that coalition's columns to 1e-5
    of the scale, the one without the first categorical feature included."""
    X_train, y_train, X_test, _ = categorical_table()
    path = get_path("tiny_v3")
    stored = make_regressor(path, n_estimators=1).get_inference_config()
    config = fixed_orders(stored)
    assert [v.categorical_name for v in stored.PREPROCESS_TRANSFORMS] == ["ordinal_very_common_categories_shuffled"]
    assert [v["categorical_name"] for v in config["PREPROCESS_TRANSFORMS"]] == ["ordinal"]

    def closed(columns, inference):
        categorical = [i for i, column in enumerate(np.flatnonzero(columns)) if column in CATEGORICAL] or None
        fitted = make_regressor(
            path, n_estimators=2, random_state=0, categorical_features_indices=categorical, inference_config=inference
        )
        return retrofit.retrofit(fitted.fit(X_train[:, columns], y_train), "o_closed")

    every = np.ones(N_FEATURES, dtype=bool)
    with pytest.raises(RetrofitError, match=r"shuffled categorical encoding"):
        values(closed(every, FIXED_ORDER), X_test, COALITIONS)
    coalitions = np.array([[1, 1, 1, 0, 1], [1, 0, 0, 0, 1], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)
    got = values(closed(every, config), X_test, coalitions)
    for k, coalition in enumerate(coalitions):
        refit = closed(coalition, config).predict(X_test[:, coalition])
        assert np.abs(got[k] - refit).max() <= REMOVAL_REL_BOUND * np.abs(refit).max(), coalition
