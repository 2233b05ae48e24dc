"""`retrofit.removal.values` (retrofit/removal/features.py): predictions with only a coalition of
features present on an o_closed regressor, with no refit, equal to the forward and to an o_closed
refit on the reduced table (tiny random tabpfn_v3 host and the shipped tiny hosts, fast)."""

import numpy as np
import pytest
import torch
from synthetic import (
    COALITIONS,
    N_FEATURES,
    N_TEST,
    N_TRAIN,
    REMOVAL_REL_BOUND,
    closed_fit,
    removal_close,
    removal_table,
)

import retrofit
from retrofit.batching import decode_members, member_inputs
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, inference_config, make_regressor
from retrofit.member_columns import member_feature_columns
from retrofit.removal import values


def test_full_coalition_is_predict(removal_case):
    regressor, _, _, X_test, _ = removal_case
    full = values(regressor, X_test, np.ones((1, N_FEATURES), dtype=bool))[0]
    reference = regressor.predict(X_test)
    assert np.abs(full - reference).max() <= REMOVAL_REL_BOUND * np.abs(reference).max()


@pytest.mark.parametrize("compact", [False, True])
def test_value_ignores_the_features_outside_the_coalition(host, compact):
    X_train, y_train, X_test, _ = removal_table()
    reference = values(closed_fit(host, X_train, y_train, compact), X_test, COALITIONS)
    rng = np.random.default_rng(1)
    for k, coalition in enumerate(COALITIONS):
        outside = ~coalition
        X_train_new, X_test_new = X_train.copy(), X_test.copy()
        X_train_new[:, outside] = rng.normal(size=(N_TRAIN, outside.sum())) * 3 + 1
        X_test_new[:, outside] = rng.normal(size=(N_TEST, outside.sum())) * 3 + 1
        # the same coalitions in the same batch layout: only the outside features' values differ
        changed = values(closed_fit(host, X_train_new, y_train, compact), X_test_new, COALITIONS)[k]
        assert removal_close(changed, reference[k], np.abs(reference).max(), compact), coalition


@pytest.mark.parametrize("compact", [False, True])
def test_value_is_the_forward_on_the_reduced_table(host, compact):
    X_train, y_train, X_test, _ = removal_table()
    regressor = closed_fit(host, X_train, y_train, compact)
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
        assert removal_close(got[k], reduced, np.abs(reduced).max(), compact=False), coalition


def test_empty_coalition_is_one_value_for_every_query(removal_case):
    regressor, _, y_train, X_test, _ = removal_case
    empty = values(regressor, X_test, np.zeros((1, N_FEATURES), dtype=bool))[0]
    assert np.ptp(empty) <= REMOVAL_REL_BOUND * np.abs(empty).max()  # no feature present: the queries are alike
    assert y_train.min() < empty[0] < y_train.max()


def test_refuses_bad_inputs(removal_case, host):
    regressor, X_train, y_train, X_test, _ = removal_case
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


PRESETS = {
    "lean": lambda host: {"PREPROCESS_TRANSFORMS": inference_config("lean")["PREPROCESS_TRANSFORMS"]},
    "stored_without_svd": lambda host: {
        "PREPROCESS_TRANSFORMS": [
            {**vars(view), "global_transformer_name": None}
            for view in make_regressor(get_path(host))
            .fit(*removal_table()[:2])
            .get_inference_config()
            .PREPROCESS_TRANSFORMS
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
    X_train, y_train, X_test, _ = removal_table()
    config = PRESETS[preset](host_name)
    got = values(closed_fit(get_path(host_name), X_train, y_train, **config), X_test, COALITIONS[:4])
    for k, coalition in enumerate(COALITIONS[:4]):
        refit = closed_fit(get_path(host_name), X_train[:, coalition], y_train, **config).predict(X_test[:, coalition])
        assert np.abs(got[k] - refit).max() <= REMOVAL_REL_BOUND * np.abs(refit).max(), coalition
