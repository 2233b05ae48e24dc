"""`retrofit.removal.shapley` (retrofit/removal/game.py): Shapley values and k-SII interactions of
the removal game through shapiq, efficient and exact (tiny random tabpfn_v3 host)."""

import numpy as np
import pytest
from refusals import one_line
from synthetic import N_FEATURES, N_TEST, REMOVAL_REL_BOUND

from retrofit.errors import RetrofitError
from retrofit.removal import shapley, values


def test_shapley_exact_is_efficient_and_matches_the_budgeted_estimate(removal_case):
    regressor, _, _, X_test, _ = removal_case
    phi = shapley(regressor, X_test)
    assert phi.shape == (N_TEST, N_FEATURES)
    ends = values(regressor, X_test, np.array([[True] * N_FEATURES, [False] * N_FEATURES]))
    assert np.abs(phi.sum(axis=1) - (ends[0] - ends[1])).max() <= REMOVAL_REL_BOUND * np.abs(ends).max()
    # a budget of every coalition makes KernelSHAP exact too
    estimate = shapley(regressor, X_test, budget=2**N_FEATURES)
    assert np.abs(estimate - phi).max() <= 1e-6 * np.abs(ends).max()
    small = shapley(regressor, X_test, budget=12)
    assert np.abs(small.sum(axis=1) - (ends[0] - ends[1])).max() <= REMOVAL_REL_BOUND * np.abs(ends).max()


def test_shapley_with_a_given_empty_prediction(removal_case):
    regressor, _, y_train, X_test, _ = removal_case
    phi = shapley(regressor, X_test, empty_prediction=float(y_train.mean()))
    full = values(regressor, X_test, np.ones((1, N_FEATURES), dtype=bool))[0]
    assert np.abs(phi.sum(axis=1) - (full - y_train.mean())).max() <= REMOVAL_REL_BOUND * np.abs(full).max()


def test_k_sii_interactions(removal_case):
    regressor, _, _, X_test, _ = removal_case
    interactions = shapley(regressor, X_test[:2], index="k-SII", max_order=2)
    assert len(interactions) == 2
    pairs = interactions[0].get_n_order_values(2)
    assert pairs.shape == (N_FEATURES, N_FEATURES) and np.abs(pairs).max() > 0
    ends = values(regressor, X_test[:2], np.array([[True] * N_FEATURES, [False] * N_FEATURES]))
    total = sum(v for key, v in interactions[0].dict_values.items() if len(key) > 0)
    assert abs(total - (ends[0, 0] - ends[1, 0])) <= REMOVAL_REL_BOUND * np.abs(ends).max()  # k-SII is efficient


def test_shapley_refuses_bad_settings(removal_case):
    regressor, _, _, X_test, _ = removal_case
    with pytest.raises(RetrofitError, match="index"):
        shapley(regressor, X_test, index="Banzhaf")
    with pytest.raises(RetrofitError, match="max_order"):
        shapley(regressor, X_test, index="SV", max_order=2)
    with pytest.raises(RetrofitError, match="budget"):
        shapley(regressor, X_test, budget=1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            dict(empty_prediction=float("nan")),
            r"empty_prediction must be None \(the closed model's own v\(∅\)\) or a finite",
        ),
        (dict(empty_prediction="0.5"), r"empty_prediction must be None .* got '0\.5'$"),
        (
            dict(budget=4, random_state="seed"),
            r"random_state must be None or an int >= 0 \(seeds shapiq's draw\), got 'seed'",
        ),
        (dict(max_cells="many"), r"max_cells must be an int >= 1 \(cells per forward\), got 'many'"),
        (dict(max_cells=2.5), r"max_cells must be an int >= 1 \(cells per forward\), got 2\.5"),
    ],
    ids=["nan-empty", "text-empty", "text-seed", "text-cells", "float-cells"],
)
def test_shapley_refuses_settings_of_the_wrong_kind_before_any_forward(removal_case, settings, message, monkeypatch):
    """A NaN empty_prediction returned NaN Shapley values without a word; text as empty_prediction,
    random_state or max_cells ended in float()'s, numpy's or a comparison's traceback."""
    regressor, _, _, X_test, _ = removal_case
    monkeypatch.setattr("retrofit.removal.context.member_inputs", lambda *_: pytest.fail("ran a forward"))
    with pytest.raises(RetrofitError, match=message) as err:
        shapley(regressor, X_test, **settings)
    one_line(err)
