"""The one fitted-case service: the same settings give the same split and the same fit everywhere."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from retrofit.data import DatasetSpec
from retrofit.errors import RetrofitError
from retrofit.fitting import CaseSpec, fit_case, fit_cases, fit_host, load_split
from retrofit.measure.host_quality import score_case
from retrofit.metrics import rmse

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def spec_of(name: str) -> DatasetSpec:
    return DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{name}.yaml").read_text()))


@pytest.fixture(scope="module")
def host(make_random_host) -> Path:
    return make_random_host("tabpfn_v3")


def test_a_case_refits_to_the_same_predictions_and_another_seed_splits_otherwise(host):
    spec = CaseSpec(spec_of("diabetes"), 3, host, Path("."), n_estimators=1)
    first, again = fit_case(spec), fit_case(spec)
    assert np.array_equal(first.X_test, again.X_test)
    assert np.array_equal(first.regressor.predict(first.X_test), again.regressor.predict(again.X_test))
    other = fit_case(CaseSpec(spec_of("diabetes"), 4, host, Path("."), n_estimators=1))
    assert not np.array_equal(other.y_test, first.y_test)
    assert (first.name, first.seed, first.regressor.random_state) == ("diabetes", 3, 3)


def test_the_fit_is_told_the_categorical_columns(host):
    case = fit_case(CaseSpec(spec_of("hitters"), 0, host, Path("."), n_estimators=1))
    assert case.data.categorical_indices
    assert case.regressor.categorical_features_indices == list(case.data.categorical_indices)
    plain = fit_case(CaseSpec(spec_of("diabetes"), 0, host, Path("."), n_estimators=1))
    assert plain.regressor.categorical_features_indices is None


def test_fit_cases_runs_datasets_outer_seeds_inner(host):
    cases = fit_cases(host, [spec_of("diabetes"), spec_of("hitters")], [1, 0], base_dir=Path("."), n_estimators=1)
    assert [(case.name, case.seed) for case in cases] == [
        ("diabetes", 1),
        ("diabetes", 0),
        ("hitters", 1),
        ("hitters", 0),
    ]


def test_an_unknown_precision_names_the_choices(host):
    _, data = load_split(spec_of("diabetes"), 0, base_dir=Path("."))
    with pytest.raises(RetrofitError, match=r"precision must be one of \['float32', 'float64'\], got 'bfloat16'"):
        fit_host(host, data, random_state=0, precision="bfloat16")


def test_host_quality_scores_the_fit_every_experiment_gets(host):
    case = fit_case(CaseSpec(spec_of("hitters"), 2, host, Path("."), n_estimators=1))
    score = rmse(case.y_test, case.regressor.predict(case.X_test))
    rows = score_case("hitters", 2, case.data, {"h": host}, ["stored"], n_estimators=1)
    assert [row["rmse"] for row in rows if row["model"] == "h[stored]"] == [score]
