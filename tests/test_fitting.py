"""The one fitted-case service: the same settings give the same split and the same fit everywhere."""

from pathlib import Path

import numpy as np
import pytest

from benchmarks.host_baselines import score_case
from retrofit.errors import RetrofitError
from retrofit.fitting import CaseSpec, fit_case, fit_cases, fit_host, load_split
from retrofit.metrics import rmse


def test_a_case_refits_to_the_same_predictions_and_another_seed_splits_otherwise(host, dataset_spec):
    spec = CaseSpec(dataset_spec("diabetes"), 3, host, Path("."), n_estimators=1)
    first, again = fit_case(spec), fit_case(spec)
    assert np.array_equal(first.X_test, again.X_test)
    assert np.array_equal(first.regressor.predict(first.X_test), again.regressor.predict(again.X_test))
    other = fit_case(CaseSpec(dataset_spec("diabetes"), 4, host, Path("."), n_estimators=1))
    assert not np.array_equal(other.y_test, first.y_test)
    assert (first.name, first.seed, first.regressor.random_state) == ("diabetes", 3, 3)


def test_the_fit_is_told_the_categorical_columns(host, dataset_spec):
    case = fit_case(CaseSpec(dataset_spec("hitters"), 0, host, Path("."), n_estimators=1))
    assert case.data.categorical_indices
    assert case.regressor.categorical_features_indices == list(case.data.categorical_indices)
    plain = fit_case(CaseSpec(dataset_spec("diabetes"), 0, host, Path("."), n_estimators=1))
    assert plain.regressor.categorical_features_indices is None


def test_fit_cases_runs_datasets_outer_seeds_inner(host, dataset_spec):
    cases = fit_cases(
        host, [dataset_spec("diabetes"), dataset_spec("hitters")], [1, 0], base_dir=Path("."), n_estimators=1
    )
    assert [(case.name, case.seed) for case in cases] == [
        ("diabetes", 1),
        ("diabetes", 0),
        ("hitters", 1),
        ("hitters", 0),
    ]


def test_an_unknown_precision_names_the_choices(host, dataset_spec):
    _, data = load_split(dataset_spec("diabetes"), 0, base_dir=Path("."))
    choices = r"\['auto', 'float32', 'float64'\]"
    with pytest.raises(RetrofitError, match=rf"precision must be one of {choices}, got 'bfloat16'"):
        fit_host(host, data, random_state=0, precision="bfloat16")


def test_host_quality_scores_the_fit_every_experiment_gets(host, dataset_spec):
    case = fit_case(CaseSpec(dataset_spec("hitters"), 2, host, Path("."), n_estimators=1))
    score = rmse(case.y_test, case.regressor.predict(case.X_test))
    rows = score_case("hitters", 2, case.data, {"h": host}, ["stored"], n_estimators=1)
    assert [row["rmse"] for row in rows if row["model"] == "h[stored]"] == [score]
