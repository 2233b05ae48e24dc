"""`retrofit.compare` (`retrofit.comparison`): the sweep's matched comparison of a table in memory, the
same numbers as the sweep's, and its one-line refusals before any fit."""

import itertools

import numpy as np
import pandas as pd
import pytest
from processes import run_python
from refusals import one_line
from synthetic import houses, small_regression_data

import retrofit
from retrofit.bounds import MAX_JOBS
from retrofit.data import DatasetError
from retrofit.errors import RetrofitError


@pytest.mark.slow
def test_compare_gives_the_sweeps_numbers_for_the_same_table(tmp_path):
    """The sweep of `dataset=csv` (a subprocess, a path relative to its start directory) and
    `retrofit.compare` of the same CSV read into a DataFrame: the same split, fit and variants,
    so the same RMSE, NLL and CRPS per seed × variant."""
    houses().to_csv(tmp_path / "houses.csv", index=False)
    settings = ["variant=[oa_only,full_o]", "n_estimators=2", "seed=1", "timing.rounds=0"]
    out = run_python(
        "-m",
        "retrofit",
        "sweep",
        "dataset=csv",
        "dataset.path=houses.csv",
        "dataset.target=price",
        *settings,
        "results_dir=results",
        "cache_dir=cache",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    swept = pd.read_csv(tmp_path / "results" / "retrofit_rmse.csv").query("variant != 'baseline'")
    assert set(swept.dataset) == {"houses"}
    frame = pd.read_csv(tmp_path / "houses.csv")
    rows = retrofit.compare(frame, "price", variants=["oa_only", "full_o"], seeds=[1], n_estimators=2)
    assert list(rows.variant) == ["oa_only", "full_o"] and set(rows.seed) == {1}
    merged = rows.merge(swept, on=["seed", "variant"], suffixes=("", "_swept"))
    assert len(merged) == 2
    for column in ("rmse", "baseline_rmse", "delta_rmse_pct", "nll", "crps"):
        np.testing.assert_allclose(merged[column], merged[f"{column}_swept"], rtol=1e-6, atol=1e-9, err_msg=column)
    assert (merged.rmse != merged.baseline_rmse).all()  # the variants changed the prediction: not the stock copy twice


def test_compare_takes_arrays_and_refuses_before_fitting():
    frame = houses()
    X, y = frame[["area", "rooms"]].to_numpy(), frame.price.to_numpy()
    rows = retrofit.compare(X, y, variants=["oa_only"], n_estimators=1)
    assert rows.shape == (1, 9) and np.isfinite(rows[["rmse", "nll", "crps"]].to_numpy()).all()
    assert rows.baseline_rmse[0] < frame.price.std()  # it learned something from x0, x1
    with pytest.raises(RetrofitError, match="unknown variant 'nope'"):
        retrofit.compare(X, y, variants=["nope"])
    with pytest.raises(RetrofitError, match="one value per row of X"):
        retrofit.compare(X, y[:-1])
    with pytest.raises(RetrofitError, match="y='price' names a column, so X must be a DataFrame"):
        retrofit.compare(X, "price")


def test_compare_refuses_a_table_whose_features_are_all_constant():
    """tabpfn refuses a table it would reduce to no feature (TabPFNValidationError); the split names it first."""
    X, y = small_regression_data()
    with pytest.raises(DatasetError, match=r"every feature is constant on the training rows of seed 0"):
        retrofit.compare(np.full_like(X, 3.0), y, variants=["oa_only"], n_estimators=1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"variants": []}, r"variants is empty, so compare would return no row"),
        ({"seeds": []}, r"seeds is empty, so compare would return no row"),
        ({"seeds": [0, 1, 0]}, r"seeds \[0, 1, 0\] repeat a seed"),
        (
            {"variants": "oa_only"},
            r"^variants must be a list, got str 'oa_only'; a list even of one: variants=\['oa_only'\]$",
        ),
        ({"variants": {"adapters": ["o_ffn"]}}, r"^variants must be a list, got dict .*variants=\[\{'adapters'"),
        ({"seeds": 3}, r"^seeds must be a list, got int 3; a list even of one: seeds=\[3\]$"),
        ({"test_size": "0.3"}, r"test_size must be the share of rows held out, a number in \(0, 1\) .*got '0.3'$"),
        ({"test_size": 30}, r"test_size must be the share of rows held out, a number in \(0, 1\) .*got 30$"),
        ({"categorical": "x0"}, r"categorical must be a list of column names, got the one name 'x0'; .*\['x0'\]$"),
    ],
    ids=[
        "no-variant",
        "no-seed",
        "repeated-seed",
        "one-name",
        "one-spec",
        "one-seed",
        "text-test-size",
        "rows-as-test-size",
        "one-categorical",
    ],
)
def test_compare_refuses_arguments_it_would_drop_repeat_or_misread(arguments, message):
    """An empty list returned an empty frame in silence; a repeated seed fitted the same split twice.
    One variant name where a list goes was read letter by letter ("unknown variant 'o'"), and so was
    one categorical column (naming columns that do not exist); one seed or a test_size in text ended
    in a TypeError, a test_size counted in rows in "leaves -1740 of its 60 rows for training"."""
    with pytest.raises(RetrofitError, match=message) as err:
        retrofit.compare(*small_regression_data(), **{"variants": ["oa_only"], "n_estimators": 1, **arguments})
    one_line(err)


def test_compare_and_the_estimator_refuse_inputs_that_are_no_table_or_no_numbers():
    X, y = small_regression_data()
    with pytest.raises(RetrofitError, match=r"X must be a table \(rows × features\), got 3 dimensions"):
        retrofit.compare(X[:, :, None], y, variants=["oa_only"], n_estimators=1)
    with pytest.raises(
        RetrofitError, match=r"RetrofitRegressor.fit: y must be numbers \(a regression target\), got text"
    ):
        retrofit.RetrofitRegressor("oa_only", n_estimators=1).fit(X, y.astype(str))


def test_compare_bounds_its_members_as_the_sweep_does():
    """retrofit.compare(n_estimators=10**6) used to start an unbounded fit; the sweep refuses the same
    number (one bound, `MAX_MEMBERS`, in `make_regressor`)."""
    X, y = small_regression_data()
    with pytest.raises(RetrofitError, match=r"n_estimators must be an integer in \[1, 10000\]"):
        retrofit.compare(X, y, variants=["oa_only"], n_estimators=10**6)


@pytest.mark.parametrize("seeds", [range(10**6), range(MAX_JOBS + 1), "endless"])
def test_compare_bounds_its_seeds_before_fitting(seeds):
    """seeds=range(10**6) started a million fits, and an endless generator never ended; more than
    `MAX_JOBS` seeds are refused in one line before any fit, reading one seed past the bound."""
    X, y = small_regression_data()
    drawn = itertools.count()
    given = (next(drawn) for _ in itertools.count()) if seeds == "endless" else seeds
    with pytest.raises(RetrofitError) as err:
        retrofit.compare(X, y, variants=["oa_only"], seeds=given)
    assert one_line(err) == (
        "seeds lists more than 1000 seeds (retrofit.bounds.MAX_JOBS), one fit each; compare at most 1000 per call "
        "(e.g. seeds=range(1000)) and concatenate the frames"
    )
    if seeds == "endless":
        assert next(drawn) == MAX_JOBS + 1


def test_compare_takes_as_many_seeds_as_the_bound():
    """`MAX_JOBS` seeds are read whole: here the last repeats the first and is refused for that."""
    X, y = small_regression_data()
    with pytest.raises(RetrofitError, match=r"seeds \[0, 1, 2, .*, 19\] and 980 more \(1000 in all\) repeat a seed"):
        retrofit.compare(X, y, variants=["oa_only"], seeds=[*range(MAX_JOBS - 1), 0])


@pytest.mark.parametrize("seeds", [[-1], [0, 2**32], [0.5], [True]])
def test_compare_refuses_a_seed_numpy_cannot_take_before_fitting(seeds):
    """seeds=[-1] used to end in sklearn's own InvalidParameterError, after the first seeds' fits."""
    X, y = small_regression_data()
    with pytest.raises(RetrofitError, match=rf"seed {seeds[-1]!r} must be an integer in \[0, 4294967295\]"):
        retrofit.compare(X, y, variants=["oa_only"], seeds=seeds)
