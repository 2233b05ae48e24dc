"""`RetrofitRegressor` as a scikit-learn estimator, and the lifecycle of a regressor `retrofit`
returns (refit refused, models checked against the report, clone, pickle). Shipped tiny_v3 host."""

import copy
import pickle
import re
from functools import partial

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from refusals import one_line
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks
from sklearn.utils.validation import check_is_fitted
from synthetic import regression_data, small_regression_data
from tabpfn import TabPFNRegressor

from retrofit import RetrofitRegressor, predict_many, retrofit, unpatch
from retrofit.adapters import AttentionSettings, TauRule
from retrofit.bounds import WORK_ENV
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor
from retrofit.hosts.regressor import resolve_device
from retrofit.removal import row_values
from retrofit.runner.sweep_config import case_from_hydra
from retrofit.variants import HPARAMS, resolve_variant

EXPECTED_FAILED_CHECKS = {
    "check_methods_subset_invariance": (
        "float32 rounding, as for the stock TabPFNRegressor: all test rows go through one forward pass, so "
        "predicting a subset changes the matrix-multiply batch sizes and the last bits (~2e-7 absolute)"
    ),
}
"""The sklearn checks RetrofitRegressor fails, with why; the stock TabPFNRegressor fails the same."""
ONE_LINE_CHECKS = {
    "check_dataframe_column_names_consistency": (
        "it matches sklearn's several-line list of names; predict says the same in one line (missing, "
        "unexpected or reordered, and the fix), held by test_predict_names_the_columns_that_differ_in_one_line"
    ),
}
"""The sklearn checks RetrofitRegressor alone fails: they match a message of several lines."""


def _expected_failed_checks(estimator: RetrofitRegressor) -> dict[str, str]:
    return EXPECTED_FAILED_CHECKS | ONE_LINE_CHECKS


_data = partial(regression_data, n=90)


def _stock(n_estimators: int = 1) -> TabPFNRegressor:
    return make_regressor(get_path("tiny_v3"), n_estimators=n_estimators, random_state=0)


@pytest.fixture(scope="module")
def patched() -> tuple[TabPFNRegressor, np.ndarray, np.ndarray]:
    """(stock regressor fitted on 60 rows, its "oa_only" retrofit, 30 test rows)."""
    X, y = _data()
    stock = _stock().fit(X[:60], y[:60])
    return stock, retrofit(stock, "oa_only"), X[60:]


# --- the regressor `retrofit` returns ----------------------------------------------------------


def test_patched_regressor_refuses_fit_and_keeps_predicting_the_variant(patched):
    _, oa_only, X_test = patched
    before = oa_only.predict(X_test)
    X, y = _data(seed=1)
    with pytest.raises(RetrofitError, match=r"silently drop the O adapters.*RetrofitRegressor"):
        oa_only.fit(X, y)
    with pytest.raises(RetrofitError, match="retrofit variant 'oa_only'"):
        oa_only.fit_from_preprocessed(X, y)
    assert len(oa_only.retrofit_report_.patched) == 4  # tiny_v3: four in-context blocks
    assert np.array_equal(oa_only.predict(X_test), before)


def test_predict_refuses_models_that_disagree_with_the_report(patched):
    stock, oa_only, X_test = patched
    refitted = copy.deepcopy(oa_only)
    TabPFNRegressor.fit(refitted, *_data())  # around the refusal: tabpfn reloads stock models
    with pytest.raises(RetrofitError, match=re.escape("no longer run what retrofit_report_ says (0 wrapped blocks")):
        refitted.predict(X_test)
    swapped = copy.deepcopy(oa_only)
    swapped.models_ = copy.deepcopy(stock.models_)
    with pytest.raises(RetrofitError, match=re.escape("not in regressor.models_ (models_ replaced")):
        swapped.predict(X_test)


def test_unpatched_regressor_is_a_plain_regressor_again(patched):
    _, oa_only, X_test = patched
    restored = unpatch(copy.deepcopy(oa_only))
    assert type(restored) is TabPFNRegressor
    X, y = _data(seed=1)
    refit = restored.fit(X[:60], y[:60]).predict(X_test)
    assert np.array_equal(refit, _stock().fit(X[:60], y[:60]).predict(X_test))


def test_clone_of_a_patched_regressor_is_the_unfitted_stock_regressor(patched):
    """sklearn semantics: clone copies parameters, and the variant is fitted state. Fitting the
    clone and retrofitting it again gives the same predictions, bit for bit."""
    stock, oa_only, X_test = patched
    plain = clone(oa_only)
    assert type(plain) is TabPFNRegressor and plain.get_params() == stock.get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(plain)
    X, y = _data()
    again = retrofit(plain.fit(X[:60], y[:60]), "oa_only")
    assert np.array_equal(again.predict(X_test), oa_only.predict(X_test))


def test_patched_regressor_pickles(patched):
    _, oa_only, X_test = patched
    loaded = pickle.loads(pickle.dumps(oa_only))
    assert type(loaded) is type(oa_only) and loaded.retrofit_report_ == oa_only.retrofit_report_
    assert np.array_equal(loaded.predict(X_test), oa_only.predict(X_test))
    with pytest.raises(RetrofitError, match="RetrofitRegressor"):
        loaded.fit(*_data())


# --- RetrofitRegressor -------------------------------------------------------------------------


@parametrize_with_checks(
    [RetrofitRegressor(n_estimators=1, random_state=0, device="cpu")], expected_failed_checks=_expected_failed_checks
)
def test_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(
    [RetrofitRegressor("oa_only", host="tiny_v2", n_estimators=2, random_state=0, device="cpu")],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_checks_on_tiny_v2(estimator, check):
    check(estimator)


@pytest.mark.slow
def test_stock_regressor_fails_the_same_sklearn_checks():
    """RetrofitRegressor passes every check the stock TabPFNRegressor passes on the same host."""
    results = check_estimator(_stock(), on_fail=None)
    assert {r["check_name"] for r in results if r["status"] == "failed"} == set(EXPECTED_FAILED_CHECKS)


def test_fit_is_the_stock_fit_retrofitted():
    X, y = _data()
    estimator = RetrofitRegressor("oa_only", n_estimators=2, random_state=0, device="cpu").fit(X[:60], y[:60])
    by_hand = retrofit(_stock(n_estimators=2).fit(X[:60], y[:60]), "oa_only")
    assert np.array_equal(estimator.predict(X[60:]), by_hand.predict(X[60:]))
    assert estimator.regressor_.retrofit_report_ == by_hand.retrofit_report_
    assert estimator.n_features_in_ == 4


def test_hyper_parameters_take_effect_and_none_keeps_the_variant_default():
    X, y = _data()
    tau = {"mode": "absolute", "value": 2.0}
    tuned = RetrofitRegressor(tau=tau, eps_den=1e-3, eps_mode="relative", compact=True, n_estimators=1, device="cpu")
    variant = tuned.fit(X, y).regressor_.retrofit_report_.variant
    taken = (variant.tau.mode, variant.tau.value, variant.eps_den, variant.eps_mode, variant.compact)
    assert taken == ("absolute", 2.0, 1e-3, "relative", True)
    block = tuned.regressor_.models_[0].icl_blocks[0]
    assert (block.tau.value, block.attention) == (2.0, AttentionSettings(1e-3, "relative", True))
    assert tuned.get_params()["tau"] is tau
    default = RetrofitRegressor(n_estimators=1, device="cpu").fit(X, y).regressor_.retrofit_report_.variant
    assert default == resolve_variant("full_o")


def test_constructor_takes_every_variant_hyper_parameter():
    assert set(HPARAMS) <= set(RetrofitRegressor().get_params())


def test_cross_val_score_equals_a_fold_loop_by_hand():
    X, y = _data()
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(RetrofitRegressor("oa_only", n_estimators=1, random_state=0, device="cpu"), X, y, cv=folds)
    by_hand = [
        r2_score(y[test], retrofit(_stock().fit(X[train], y[train]), "oa_only").predict(X[test]))
        for train, test in folds.split(X)
    ]
    assert np.array_equal(scores, by_hand) and scores.min() > 0.5


@pytest.mark.parametrize(
    "taus", [[{"mode": "calibrated", "c": 1e-3}, {"mode": "calibrated", "c": 1.0}], [1e-3, 1.0]], ids=["rule", "number"]
)
def test_grid_search_over_tau_and_eps_den(taus):
    X, y = _data()
    search = GridSearchCV(
        RetrofitRegressor("oa_only", n_estimators=1, random_state=0, device="cpu"),
        {"tau": taus, "eps_den": [1e-6, 1.0]},
        cv=KFold(2, shuffle=True, random_state=0),
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 4 and len(set(scores)) == 4  # every candidate ran its own variant
    variant = search.best_estimator_.regressor_.retrofit_report_.variant
    best_c = search.best_params_["tau"]["c"] if isinstance(taus[0], dict) else search.best_params_["tau"]
    assert (variant.tau, variant.eps_den) == (TauRule("calibrated", c=best_c), search.best_params_["eps_den"])


def test_a_grid_over_tau_at_the_default_seed_moves_by_the_variants_own_delta_rmse():
    """Every fit of a grid draws the same ensemble (random_state 0 by default, as make_regressor's),
    so the grid's spread over tau is the spread of full_o's ΔRMSE against the stock host on the
    same folds, not the ensemble seed's."""
    assert RetrofitRegressor().random_state == 0
    X, y = _data()
    folds = KFold(3, shuffle=True, random_state=0)
    scoring = "neg_root_mean_squared_error"
    settings = dict(n_estimators=2, device="cpu")
    taus = [1e-4, 1e-3, 1e-2]
    grid = GridSearchCV(RetrofitRegressor("full_o", **settings), {"tau": taus}, cv=folds, scoring=scoring).fit(X, y)
    rmse_T = -grid.cv_results_["mean_test_score"]
    baseline = -cross_val_score(RetrofitRegressor("baseline", **settings), X, y, cv=folds, scoring=scoring).mean()
    delta_T = rmse_T - baseline  # full_o vs the stock host, the same folds and ensemble
    assert np.abs(delta_T).max() > 0  # the grid measures something
    spread = rmse_T.max() - rmse_T.min()
    assert spread <= 2 * np.abs(delta_T).max()
    assert spread == pytest.approx(delta_T.max() - delta_T.min(), abs=1e-9 * baseline)


def test_a_hyper_parameter_the_variant_does_not_use_is_refused():
    X, y = _data()
    for variant, key, value in [("baseline", "tau", 1e-3), ("baseline", "compact", True)]:
        with pytest.raises(RetrofitError, match=rf"variant 'baseline' does not use {key}=.*no hyper-parameter"):
            RetrofitRegressor(variant, n_estimators=1, device="cpu", **{key: value}).fit(X[:60], y[:60])
    ffn_only = {"name": "ffn", "adapters": ["o_ffn"], "tau": 1e-3, "eps_den": 1e-6}
    with pytest.raises(RetrofitError, match=r"variant 'ffn' does not use eps_mode='relative' \(it uses \['tau'\]\)"):
        RetrofitRegressor(ffn_only, eps_mode="relative", n_estimators=1, device="cpu").fit(X[:60], y[:60])
    assert resolve_variant("o_closed").hparams_used == HPARAMS


def test_a_bare_number_tau_is_c_of_the_calibrated_rule_in_the_api_and_on_the_command_line(hydra_compose):
    X, y = _data()
    rule = TauRule("calibrated", c=1e-2)
    settings = dict(n_estimators=1, random_state=0, device="cpu")
    number = RetrofitRegressor("oa_only", tau=1e-2, **settings).fit(X[:60], y[:60])
    spelled = RetrofitRegressor("oa_only", tau={"mode": "calibrated", "c": 1e-2}, **settings).fit(X[:60], y[:60])
    default = RetrofitRegressor("oa_only", **settings).fit(X[:60], y[:60])
    assert number.regressor_.retrofit_report_.variant.tau == rule
    assert np.array_equal(number.predict(X[60:]), spelled.predict(X[60:]))
    assert not np.array_equal(number.predict(X[60:]), default.predict(X[60:]))  # c=1e-2, not the variant's 1e-3
    assert retrofit(_stock().fit(X[:60], y[:60]), "oa_only", tau=0.01).retrofit_report_.variant.tau == rule
    cases = [
        case_from_hydra(cfg, cfg.hydra)
        for cfg in (
            hydra_compose("sweep", ["variant=oa_only", tau]) for tau in ("variant.tau=0.01", "variant.tau.c=0.01")
        )
    ]
    (_, by_number), (_, by_key) = (case.units for case in cases)
    assert by_number.hparams == by_key.hparams == {"tau": {"mode": "calibrated", "c": 0.01}}
    assert cases[0].key(by_number) == cases[1].key(by_key)  # one unit, however tau is written
    assert by_number.resolved().tau == rule


def test_pipeline():
    X, y = _data()
    estimator = RetrofitRegressor("oa_only", n_estimators=1, random_state=0, device="cpu")
    pipeline = make_pipeline(StandardScaler(), estimator)
    scaler = StandardScaler().fit(X[:60])
    by_hand = retrofit(_stock().fit(scaler.transform(X[:60]), y[:60]), "oa_only").predict(scaler.transform(X[60:]))
    assert np.array_equal(pipeline.fit(X[:60], y[:60]).predict(X[60:]), by_hand)


def test_joblib_round_trip(tmp_path):
    X, y = _data()
    estimator = RetrofitRegressor(n_estimators=1, random_state=0, device="cpu").fit(X[:60], y[:60])
    joblib.dump(estimator, tmp_path / "estimator.joblib")
    loaded = joblib.load(tmp_path / "estimator.joblib")
    assert loaded.get_params() == estimator.get_params()
    assert np.array_equal(loaded.predict(X[60:]), estimator.predict(X[60:]))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"variant": "nope"}, "unknown variant 'nope'"),
        ({"host": "tiny_v9"}, "unknown host 'tiny_v9'"),
        ({"model_path": "/no/such/model.ckpt"}, "does not exist"),
        ({"device": "tpu"}, "device must be one of"),
        ({"tau": {"mode": "relative", "c": 1}}, "tau.mode must be"),
        (
            {"tau": "0.01"},
            r"tau must be a number \(c of the calibrated rule: tau=0.01 is \{mode: calibrated, c: 0.01\}\)",
        ),
        ({"tau": -1.0}, r"needs tau\.c > 0 and finite \(a bare number tau=<c> is this constant\), got -1.0"),
        ({"eps_den": -1.0}, "eps_den must be a finite number > 0"),
        ({"eps_mode": "sideways"}, "eps_mode must be one of"),
    ],
)
def test_bad_parameters_fail_at_fit(params, message):
    estimator = RetrofitRegressor(n_estimators=1, device="cpu").set_params(**params)  # nothing checked yet
    with pytest.raises(RetrofitError, match=message):
        estimator.fit(*_data())
    assert not hasattr(estimator, "regressor_")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_device_on_a_machine_without_cuda():
    assert _stock().device == "cpu" and make_regressor(get_path("tiny_v3"), device="auto").device == "cpu"
    with pytest.raises(RetrofitError, match="sees no CUDA device"):
        make_regressor(get_path("tiny_v3"), device="cuda")
    with pytest.raises(RetrofitError, match="sees no CUDA device"):
        RetrofitRegressor(device="cuda").fit(*_data())


def test_cuda_turns_tf32_off(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        assert resolve_device("auto") == "cuda"
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_the_report_is_read_once_per_patch_and_predict_keeps_its_guarantee(patched, monkeypatch):
    """The report is read off the models when they are patched; predicting on those same models and
    wrappers reads nothing again, and a wrapper taken out after patching is still refused."""
    import retrofit.patched as patched_module

    _, oa_only, X_test = patched
    reads = []
    read = patched_module.report_of
    monkeypatch.setattr(patched_module, "report_of", lambda *a: reads.append(a) or read(*a))
    oa_only.predict(X_test)
    oa_only.predict(X_test)
    assert reads == []
    unwrapped = copy.deepcopy(oa_only)
    block = unwrapped.retrofit_report_.blocks[0]
    index, _, name = block.partition(":")
    parent, _, child = name.rpartition(".")
    model = unwrapped.models_[int(index)]
    setattr(model.get_submodule(parent), child, model.get_submodule(name).base_layer)
    with pytest.raises(RetrofitError, match=re.escape("no longer run what retrofit_report_ says (3 wrapped blocks")):
        unwrapped.predict(X_test)
    assert len(reads) == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_estimators": 0}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": 2.5}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": True}, r"n_estimators must be an integer in \[1, 10000\]"),
        ({"n_estimators": 10**6}, r"n_estimators must be an integer in \[1, 10000\] .*got 1000000"),
        ({"random_state": -1}, r"random_state must be None, an integer >= 0"),
        ({"random_state": "seed"}, r"random_state must be None, an integer >= 0"),
    ],
)
def test_estimator_refuses_bad_parameters_before_fitting(params, message):
    """n_estimators=0 used to fit and then fail at predict with an IndexError."""
    estimator = RetrofitRegressor("oa_only", device="cpu", **{"n_estimators": 1, **params})
    with pytest.raises(RetrofitError, match=message):
        estimator.fit(*small_regression_data())
    assert not hasattr(estimator, "regressor_")


def _sparse(X, y):
    import scipy.sparse

    return scipy.sparse.csr_matrix(X), y


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (_sparse, r"RetrofitRegressor.fit: Sparse data was passed for X, but dense data is required"),
        (lambda X, y: (X[:1], y[:1]), r"RetrofitRegressor.fit: Found array with 1 sample\(s\) .* a minimum of 2"),
        (lambda X, y: (np.ones_like(X), y), r"RetrofitRegressor.fit: All features are constant"),
        (
            lambda X, y: (np.where(np.arange(len(X))[:, None] == 3, [1, -np.inf, 1], X), y),
            r"^RetrofitRegressor.fit: column 1 \(0-based\) holds ±inf; replace it with NaN \(a missing value",
        ),
        (
            lambda X, y: (pd.DataFrame(X, columns=["a", "b", "a"]), y),
            r"^RetrofitRegressor.fit: X uses column names more than once: \['a'\]; rename or drop the copies$",
        ),
        (
            lambda X, y: (pd.DataFrame(X).assign(day=pd.date_range("2020-01-01", periods=len(X))), y),
            r"^RetrofitRegressor.fit: column 'day' holds dates, which tabpfn refuses: convert it to numbers first",
        ),
    ],
    ids=["scipy-sparse", "one-row", "constant-features", "infinity", "repeated-name", "dates"],
)
def test_estimator_refuses_unfittable_inputs_in_one_line(inputs, message):
    """Sparse X, a single row and all-constant features used to end in sklearn's TypeError or tabpfn's
    TabPFNValidationError, which an entry point shows as a traceback; ±inf and a repeated column
    name in tabpfn's several lines (the first naming an inference_config this estimator cannot take),
    a date column in numpy's "DType could not be promoted"."""
    estimator = RetrofitRegressor("oa_only", n_estimators=1)
    with pytest.raises(RetrofitError, match=message) as err:
        estimator.fit(*inputs(*small_regression_data()))
    one_line(err)
    assert not hasattr(estimator, "regressor_")


def test_every_predict_refuses_a_table_tabpfn_refuses_in_one_line(tiny_v3_fitted):
    """±inf, another width and no rows at predict ended in tabpfn's TabPFNValidationError with a
    traceback, in `predict_many` and `retrofit.removal` as in the retrofitted regressor's predict;
    a regressor fitted to read inf as missing (PASSTHROUGH_INF) still predicts it."""
    stock, X_test, _ = tiny_v3_fitted
    closed = retrofit(stock, "o_closed")
    infinite = X_test.copy()
    infinite[2, 1] = np.inf
    cases = [
        (infinite, r"column 1 \(0-based\) holds ±inf; replace it with NaN"),
        (X_test[:, :2], r"X has 2 features, but PatchedTabPFNRegressor is expecting 3 features"),
        (X_test[:0], r"Found array with 0 sample\(s\)"),
    ]
    calls = [
        ("predict", lambda X: closed.predict(X)),
        ("predict_many: X of pair 0", lambda X: predict_many([(closed, X)], max_padding=1.5)),
        ("the query rows X", lambda X: row_values(closed, X, np.ones((1, 40), dtype=bool))),
    ]
    for X, message in cases:
        for where, call in calls:
            with pytest.raises(RetrofitError, match=rf"^{re.escape(where)}: {message}") as err:
                call(X)
            one_line(err)
    X, y = small_regression_data()
    as_missing = make_regressor(get_path("tiny_v3"), n_estimators=1, inference_config={"PASSTHROUGH_INF": True})
    assert np.isfinite(retrofit(as_missing.fit(X[:40], y[:40]), "oa_only").predict(infinite)).all()


def test_text_where_fit_saw_numbers_is_refused_at_predict_naming_the_column():
    """An object array holding text at predict ended in tabpfn's bare "could not convert string to
    float"; the column is named with the fix. Text in a column fit saw text in (a categorical), and
    numbers written as text, still predict."""
    X, y = regression_data(n=60, curved=False)
    X_text = X.astype(object)
    X_text[:, 2] = np.where(X[:, 2] > 0, "high", "low")
    fitted = RetrofitRegressor("oa_only", n_estimators=1).fit(X_text, y)
    assert fitted.text_columns_ == (2,)
    given = X_text.copy()
    given[5, 0] = "n/a"
    with pytest.raises(RetrofitError) as err:
        fitted.predict(given)
    assert one_line(err) == (
        "RetrofitRegressor.predict: column 0 (0-based) holds text ('n/a') where fit saw numbers only, and tabpfn "
        "reads it as numbers: give it numbers (NaN where a value is missing), or fit on that column as text too, "
        "so it is a categorical"
    )
    frame = pd.DataFrame(given, columns=["area", "rooms", "zone", "age"])
    named = RetrofitRegressor("oa_only", n_estimators=1).fit(frame.assign(area=X[:, 0]), y)
    with pytest.raises(RetrofitError, match=r"^RetrofitRegressor.predict: column 'area' holds text \('n/a'\)"):
        named.predict(frame)
    given[5, 0] = "1.5"  # a number written as text: tabpfn reads it
    assert np.isfinite(fitted.predict(given)).all()
    given[5, 2] = "medium"  # a new level of a text column: tabpfn's categorical
    assert np.isfinite(fitted.predict(given)).all()


@pytest.mark.parametrize(
    "columns, differ",
    [
        (["a", "b", "z"], "missing ['c'], unexpected ['z']"),
        (["a", "b"], "missing ['c'], unexpected []"),
        (["c", "b", "a"], "reordered"),
    ],
    ids=["renamed", "dropped", "reordered"],
)
def test_predict_names_the_columns_that_differ_in_one_line(columns, differ):
    X, y = _data(f=3)
    model = RetrofitRegressor(n_estimators=1, device="cpu").fit(pd.DataFrame(X[:60], columns=["a", "b", "c"]), y[:60])
    given = pd.DataFrame(X[60:, : len(columns)], columns=columns)
    with pytest.raises(RetrofitError) as err:
        model.predict(given)
    assert one_line(err) == (
        f"RetrofitRegressor.predict: The feature names should match those that were passed during fit: {differ} "
        "(give X the columns fit saw, in its order: X[model.feature_names_in_], renaming a column if it was renamed)"
    )


def test_fit_and_predict_are_bounded_by_the_work_bound_before_the_work(monkeypatch):
    """With the bound at 60 × 60 × 3 = 10,800 units, a fit on 60 rows of 3 features passes and one on
    61 rows is refused before tabpfn fits; predicting 1 row (60 × 61 × 3 = 10,980) is refused,
    and the bound raised to that estimate lets it through."""
    X, y = _data(f=3)
    monkeypatch.setenv(WORK_ENV, "10800")
    model = RetrofitRegressor(n_estimators=1, device="cpu")
    with pytest.raises(RetrofitError) as err:
        model.fit(X[:61], y[:61])
    assert one_line(err) == (
        "RetrofitRegressor.fit: 61 fitted rows × 61 rows × 3 features is 1.1e+04 units of work, over the bound "
        f"of 1.1e+04 ({WORK_ENV}); fit on fewer rows, predict fewer rows per call, drop features, or raise the "
        f"bound: {WORK_ENV}=11163"
    )
    assert not hasattr(model, "regressor_")
    model.fit(X[:60], y[:60])
    with pytest.raises(RetrofitError, match=rf"predict: 60 fitted rows × 61 rows × 3 features .* {WORK_ENV}=10980$"):
        model.predict(X[60:61])
    monkeypatch.setenv(WORK_ENV, "10980")
    assert model.predict(X[60:61]).shape == (1,)
