"""The shared stages (`retrofit.adapters.shared_stages`): predictions through the cache are bitwise
the uncached ones, and a model that patches those stages or has other weights never meets another
model's tensors."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from synthetic import fit_synthetic

from retrofit.adapters import ARCHITECTURES
from retrofit.adapters.shared_stages import StageCache
from retrofit.hosts import get_path
from retrofit.patching import retrofit
from retrofit.runner.predictions import predict, predict_all, time_all

PRESENCE = {"tau": {"mode": "calibrated", "c": 1e-3}, "eps_mode": "relative"}
"""The decomposition's presence_only arm: another in-context stage, the same stages before it."""


def _variants(regressor, closed: bool) -> dict:
    units = {"baseline": {}, "oa_only": {}, "full_o": {}, "oa_only+presence": PRESENCE}
    models = {name: retrofit(regressor, name.split("+")[0], **hparams) for name, hparams in units.items()}
    return models | ({"o_closed": retrofit(regressor, "o_closed")} if closed else {})


@pytest.fixture(scope="module")
def tiny_v3():
    return fit_synthetic(get_path("tiny_v3"), n=120, n_train=80, f=5, n_estimators=3)


@pytest.fixture(scope="module")
def random_v3_5(make_random_host):
    return fit_synthetic(make_random_host("tabpfn_v3_5"), n=100, n_train=70, n_estimators=2)


@pytest.mark.parametrize("fixture", [pytest.param("tiny_v3", marks=pytest.mark.slow), "random_v3_5"])
def test_predictions_through_the_shared_stages_are_bitwise_the_uncached_ones(fixture, request):
    regressor, X_test = request.getfixturevalue(fixture)
    models = _variants(regressor, closed=fixture == "tiny_v3")
    uncached = {name: predict(model, X_test) for name, model in models.items()}
    stages = StageCache()
    cached = {name: predict(model, X_test, stages) for name, model in models.items()}
    assert all(cached[name].same_as(uncached[name]) for name in models)
    # the baseline computes the stages (one call per forward), the three other non-closed models
    # reuse them; o_closed runs its own stages and never meets the cache
    assert stages.misses >= 1 and stages.hits == 3 * stages.misses
    assert not np.array_equal(cached["oa_only"].mean, cached["baseline"].mean)  # the stages after differ
    # a reused result is a fresh copy: the forward writes into it, the kept tensors stay as they were
    again = predict(models["baseline"], X_test, stages)
    assert again.same_as(uncached["baseline"])


def test_other_weights_and_other_stages_get_their_own_tensors(tiny_v3):
    regressor, X_test = tiny_v3
    baseline = retrofit(regressor, "baseline")
    other = retrofit(regressor, "baseline")
    for model in other.models_:  # other weights in the stages before the in-context blocks only
        x_embed = next(p for name, p in model.named_parameters() if not name.startswith("icl_blocks"))
        x_embed.data = x_embed.data * 1.5
    stages = StageCache()
    first = predict(baseline, X_test, stages)
    misses = stages.misses
    second = predict(other, X_test, stages)
    assert stages.misses == 2 * misses and stages.hits == 0
    assert second.same_as(predict(other, X_test)) and not np.array_equal(first.mean, second.mean)
    closed = predict(retrofit(regressor, "o_closed"), X_test, stages)
    assert stages.misses == 2 * misses and stages.hits == 0
    assert closed.same_as(predict(retrofit(regressor, "o_closed"), X_test))


def test_frozen_and_trainable_weights_and_thread_counts_are_kept_apart(tiny_v3):
    regressor, X_test = tiny_v3
    stages = StageCache()
    predict(retrofit(regressor, "baseline"), X_test, stages)
    misses = stages.misses
    predict(regressor, X_test, stages)  # the fitted original: trainable weights (other CPU kernels)
    assert stages.misses == 2 * misses
    previous = torch.get_num_threads()
    torch.set_num_threads(previous + 1)
    try:
        predict(retrofit(regressor, "baseline"), X_test, stages)
    finally:
        torch.set_num_threads(previous)
    assert stages.misses == 3 * misses and stages.hits == 0


def test_the_cache_is_left_on_exit_and_architectures_without_shared_stages_run_as_stock(make_random_host):
    regressor, X_test = fit_synthetic(make_random_host("tabpfn_v2"), n=60, n_train=40)
    assert ARCHITECTURES["tabpfn_v2"].shared_stages == ""
    models = _variants(regressor, closed=False)
    stages = StageCache()
    assert all(predict(m, X_test, stages).same_as(predict(m, X_test)) for m in models.values())
    assert (stages.hits, stages.misses) == (0, 0)
    v3 = retrofit(fit_synthetic(get_path("tiny_v3"), n=60, n_train=40)[0], "baseline")
    with stages.reused(v3):
        assert all("_stages_0_to_2" in vars(model) for model in v3.models_)
    assert all("_stages_0_to_2" not in vars(model) for model in v3.models_)


@pytest.mark.slow
def test_predict_all_shares_the_stages_and_time_all_runs_full_forwards(tiny_v3, monkeypatch):
    """`predict_all` predicts every model once through the cache, bitwise what a plain predict
    gives; `time_all` calls `predict` without it, `rounds` times each."""
    regressor, X_test = tiny_v3
    models = _variants(regressor, closed=True)
    calls: list[tuple[str, bool]] = []
    names = {id(model): name for name, model in models.items()}
    real = predict

    def counted(model, X, stages=None):
        calls.append((names[id(model)], stages is not None))
        return real(model, X, stages)

    monkeypatch.setattr("retrofit.runner.predictions.predict", counted)
    preds = predict_all(models, X_test)
    assert calls == [(name, True) for name in models]
    calls.clear()
    times = time_all(models, X_test, rounds=2)
    assert sorted(calls) == sorted([(name, False) for name in models] * 2)
    assert {name: len(t) for name, t in times.items()} == dict.fromkeys(models, 2)
    assert all(preds[name].same_as(real(model, X_test)) for name, model in models.items())


NOT_NUMBERS = ["predict_seconds", "baseline_predict_seconds", "fit_seconds", "date"]
"""Row fields of the machine and the clock, not numbers of the method."""


def test_a_case_with_and_without_shared_stages_writes_the_same_numbers(make_case, tmp_path):
    """Every unit row of a tiny_v3 case (variants, o_closed, an arm; timed) is the same with the
    shared stages as without them, and `costs` gets the CPU seconds of every phase."""
    from benchmarks.phase_costs import PHASES, PhaseCosts
    from retrofit.runner.case import UnitSpec, run_case

    units = (UnitSpec("baseline"), UnitSpec("oa_only"), UnitSpec("o_closed"), UnitSpec("full_o", PRESENCE, timed=False))
    case = make_case(get_path("tiny_v3"), tmp_path / "runs", "carseats", host="tiny_v3", units=units, n_estimators=2)
    costs = PhaseCosts()
    shared = run_case(case, costs=costs)
    own = run_case(replace(case, overwrite=True), shared_stages=False)
    numbers = [
        pd.DataFrame(rows).drop(columns=NOT_NUMBERS).filter(regex="^(?!predict_time_ratio)") for rows in (shared, own)
    ]
    assert len(numbers[0]) == len(units) and numbers[0].equals(numbers[1])  # NaN matches NaN
    untimed = {phase: t for phase, t in costs.seconds.items() if phase != "timing"}
    assert set(untimed) == set(PHASES) - {"timing"} and all(t > 0 for t in untimed.values())
    assert costs.seconds.get("timing", 0.0) < min(untimed.values())  # nothing timed: next to no time
    timed = PhaseCosts()
    run_case(replace(case, overwrite=True, timing_rounds=1), costs=timed)
    assert set(timed.seconds) == set(PHASES) and timed.seconds["timing"] > 0
