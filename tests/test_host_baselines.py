"""The host quality bar's arithmetic and the extrapolation probe."""

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression
from synthetic import regression_data

from benchmarks.host_baselines import extrapolation_probe, host_regressor, summarise
from retrofit.hosts.checkpoint import INFERENCE_PRESETS, TABPFN_PRESETS, inference_config


def _scores(host_rmse: dict[str, float]) -> pd.DataFrame:
    """Two datasets x one seed: mean 10, ridge 5, RF 6 on both; the host as given per dataset."""
    rows = []
    for dataset, host in host_rmse.items():
        for model, rmse in {"mean": 10.0, "ridge": 5.0, "random_forest": 6.0, "host[stored]": host}.items():
            rows.append({"dataset": dataset, "seed": 0, "model": model, "rmse": rmse, "device": "cpu"})
    return pd.DataFrame(rows)


def test_summary_takes_the_geometric_mean_and_the_worst_dataset():
    summary = summarise(_scores({"a": 4.0, "b": 6.25})).set_index("model")
    host = summary.loc["host[stored]"]
    assert host["geomean_rmse_over_ridge"] == pytest.approx(np.sqrt(0.8 * 1.25))  # = 1.0
    assert (host["worst_dataset"], host["worst_rmse_over_mean"]) == ("b", 0.625)
    assert bool(host["meets_bar"])


@pytest.mark.parametrize(
    "host_rmse, meets",
    [({"a": 5.0, "b": 5.5}, True), ({"a": 5.0, "b": 5.6}, False)],  # geomean 1.049 / 1.058 x ridge
)
def test_bar_is_the_ridge_geomean_at_1_05(host_rmse, meets):
    host = summarise(_scores(host_rmse)).set_index("model").loc["host[stored]"]
    assert bool(host["meets_bar"]) == meets, host.to_dict()


def test_bar_fails_when_one_dataset_is_not_clearly_better_than_the_mean():
    # Geomean vs ridge sqrt(0.6 x 1.72) = 1.016 passes; only the mean ratio (0.86 > 0.85) fails.
    scores = _scores({"a": 3.0, "b": 8.6})
    host = summarise(scores).set_index("model").loc["host[stored]"]
    assert host["worst_rmse_over_mean"] == pytest.approx(0.86) and not bool(host["meets_bar"])


def test_extrapolation_probe_is_exact_for_a_linear_learner_and_flat_for_the_mean():
    linear = extrapolation_probe(LinearRegression())
    np.testing.assert_allclose(linear["pred_y_z"], linear["true_y_z"], atol=0.02)
    assert linear["true_y_z"].iloc[-1] == pytest.approx(6.0, abs=0.05)
    flat = extrapolation_probe(DummyRegressor())
    np.testing.assert_allclose(flat["pred_y_z"], 0.0, atol=1e-9)


def test_host_regressor_applies_a_named_preset_or_keeps_the_stored_config(make_random_host):
    path = make_random_host("tabpfn_v2")
    X, y = regression_data(0, 50, 3)
    raw = host_regressor(path, "raw", n_estimators=1, seed=0).fit(X, y)
    stored = host_regressor(path, "stored", n_estimators=1, seed=0).fit(X, y)
    assert [t.name for t in raw.inference_config_.PREPROCESS_TRANSFORMS] == ["none"]
    assert raw.inference_config_ != stored.inference_config_


@pytest.mark.parametrize("preset", sorted([*INFERENCE_PRESETS, *TABPFN_PRESETS]))
def test_every_preset_is_a_config_tabpfn_runs(make_random_host, preset):
    X, y = regression_data(0, 50, 3)
    reg = host_regressor(make_random_host("tabpfn_v3"), preset, n_estimators=2, seed=0).fit(X[:40], y[:40])
    assert np.isfinite(reg.predict(X[40:])).all()


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="v2_5_default"):
        inference_config("v9_default")
