"""A case's predictions and timing (`retrofit.runner.case`: `predict_all`, `time_all`,
`timing_columns`): one prediction per model, interleaved rounds on a regressor of its own, ratios
and their range, the timing settings part of a timed unit's identity."""

import math

import numpy as np
import pytest

from retrofit.errors import RunnerError
from retrofit.metrics import BarPredictive
from retrofit.results import run_files as agg
from retrofit.results.pages import times_markdown
from retrofit.runner import case as case_module
from retrofit.runner.case import UnitSpec, predict_all, run_case, time_all, timing_columns


def test_timed_case_records_median_times_and_paired_ratios(host, tmp_path, case_on):
    untimed = run_case(case_on(host, tmp_path / "a"))
    timed = run_case(case_on(host, tmp_path / "b", timing_rounds=3))
    assert [r["rmse"] for r in timed] == [r["rmse"] for r in untimed]  # timing never changes a number
    baseline, *variants = timed
    assert (baseline["predict_time_ratio"], baseline["predict_time_ratio_min"]) == (1.0, 1.0)
    assert baseline["predict_seconds"] == baseline["baseline_predict_seconds"] > 0
    for row in variants:
        assert 0 < row["predict_time_ratio_min"] <= row["predict_time_ratio"] <= row["predict_time_ratio_max"]


def test_the_timing_runs_on_its_own_regressor_with_timing_members(host, tmp_path, case_on, monkeypatch):
    """The timed calls are of regressors fitted on the case's split with `timing_members` members
    (the stock host and each timed unit's variant on it), never of the case's own regressor; the
    untimed arm is not timed; every unit's prediction is the one an untimed case gives."""
    timed_models: list[dict] = []

    def recorded(models, X, rounds):
        timed_models.append(dict(models))
        return real(models, X, rounds)

    real = case_module.time_all
    monkeypatch.setattr(case_module, "time_all", recorded)
    units = (UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("full_o", timed=False))
    case = case_on(host, tmp_path / "b", units=units, timing_rounds=2, timing_members=2)
    rows = run_case(case)
    (models,) = timed_models
    (stock, stock_model), (oa_only, oa_model) = models.items()
    assert stock == "baseline" and "variant=oa_only" in oa_only
    assert stock_model.n_estimators == oa_model.n_estimators == 2 and case.n_estimators != 2
    assert not stock_model.retrofit_report_.patched and oa_model.retrofit_report_.patched
    assert np.isnan(rows[2]["predict_time_ratio"]) and np.isfinite(rows[1]["predict_time_ratio"])
    untimed = run_case(case_on(host, tmp_path / "a", units=units))
    assert [r["rmse"] for r in rows] == [r["rmse"] for r in untimed]


class CountingModel:
    """A stand-in regressor on the CPU: counts its calls, records the call order, predicts `value`."""

    devices_ = ("cpu",)

    def __init__(self, name: str, value: float, order: list[str]):
        self.name, self.value, self.order = name, value, order

    def predict(self, X):
        self.order.append(self.name)
        return np.full(len(X), self.value)


class DriftingModel(CountingModel):
    """A stand-in whose every call predicts a little more than the last (a non-deterministic host)."""

    def predict(self, X):
        self.order.append(self.name)
        return np.full(len(X), self.value + 1e-12 * len(self.order))


def _counted_predict(model, X, stages=None):
    """`retrofit.runner.case.predict` on a stand-in model: its values as the mean, one fixed two-bucket
    distribution per row, no tau."""
    bars = BarPredictive(np.zeros((len(X), 2)), np.array([0.0, 1.0, 2.0]))
    return case_module.Prediction(model.predict(X), bars, math.nan)


def test_predict_all_predicts_once_each_and_time_all_in_rotated_rounds(monkeypatch):
    """Every model predicts once, in the models' order; the timed ones then predict `rounds` times
    each, the order rotating every round, and no timing call is made with 0 rounds."""
    monkeypatch.setattr(case_module, "predict", _counted_predict)
    order: list[str] = []
    models = {name: CountingModel(name, v, order) for name, v in (("baseline", 1.0), ("a", 2.0), ("b", 3.0))}
    preds = predict_all(models, np.zeros((4, 2)))
    assert order == ["baseline", "a", "b"] and list(preds) == list(models)
    assert {k: v.mean[0] for k, v in preds.items()} == {"baseline": 1.0, "a": 2.0, "b": 3.0}
    order.clear()
    times = time_all(models, np.zeros((4, 2)), rounds=3)
    assert order == ["baseline", "a", "b", "a", "b", "baseline", "b", "baseline", "a"]
    assert {k: len(v) for k, v in times.items()} == {"baseline": 3, "a": 3, "b": 3}
    assert all(t >= 0 for ts in times.values() for t in ts)
    order.clear()
    assert time_all(models, np.zeros((4, 2)), rounds=0) == {"baseline": [], "a": [], "b": []} and order == []


def test_prediction_same_as_compares_mean_distribution_and_tau():
    bars = BarPredictive(np.zeros((2, 2)), np.array([0.0, 1.0, 2.0]))
    a = case_module.Prediction(np.array([1.0, 2.0]), bars, math.nan)
    assert a.same_as(a._replace(mean=a.mean.copy())) and a.same_as(a)  # NaN tau equals NaN tau
    other_bars = BarPredictive(np.array([[0.0, 0.0], [0.0, 1e-9]]), bars.borders_B)
    for changed in (
        a._replace(mean=np.array([1.0, 2.0 + 1e-12])),
        a._replace(distribution=other_bars),
        a._replace(tau=0.5),
    ):
        assert not a.same_as(changed) and not changed.same_as(a)


def test_time_all_refuses_a_model_whose_calls_disagree(monkeypatch):
    """A model that predicts otherwise on every call cannot be compared matched: timing it fails,
    naming it; one call (its prediction) has nothing to disagree with."""
    monkeypatch.setattr(case_module, "predict", _counted_predict)
    models = {"baseline": CountingModel("baseline", 1.0, []), "a": DriftingModel("a", 2.0, [])}
    with pytest.raises(RunnerError, match=r"a: its 2 timed predict calls returned different predictions"):
        time_all(models, np.zeros((4, 2)), rounds=2)
    assert predict_all(models, np.zeros((4, 2)))["a"].mean[0] > 2.0


def test_timing_columns_are_median_and_range_of_per_round_ratios():
    times = {"baseline": [1.0, 2.0, 4.0], "a": [1.5, 2.0, 2.0]}
    columns = timing_columns(times, "a", load=0.25)
    assert columns == {
        "load": 0.25,
        "predict_seconds": 2.0,
        "predict_time_ratio": 1.0,
        "predict_time_ratio_min": 0.5,
        "predict_time_ratio_max": 1.5,
    }


def test_new_timing_settings_retime_a_cached_unit_and_are_shown(host, tmp_path, diabetes_case):
    units = (UnitSpec("baseline"), UnitSpec("oa_only"))
    first = run_case(diabetes_case(host, tmp_path, units=units, timing_rounds=1))
    again = run_case(diabetes_case(host, tmp_path, units=units, timing_rounds=1))
    assert [r["identity"] for r in again] == [r["identity"] for r in first]  # reused
    retimed = run_case(diabetes_case(host, tmp_path, units=units, timing_rounds=2, timing_members=2))
    assert [(r["timing_rounds"], r["timing_members"]) for r in first] == [(1, 1), (1, 1)]
    assert [(r["timing_rounds"], r["timing_members"]) for r in retimed] == [(2, 2), (2, 2)]
    assert [r["rmse"] for r in retimed] == [r["rmse"] for r in first]  # the numbers stay
    frame = agg.frame_of(retimed)
    assert "| 2 rounds, 2 members |" in times_markdown(frame)
