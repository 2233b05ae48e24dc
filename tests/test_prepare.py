"""`retrofit.data.prepare`: column names, usable rows, the split's two sides and the target's scale are
checked before fitting, each refusal in one line; inside the accepted scales the numbers are the
unit-scale ones."""

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from refusals import one_line
from synthetic import csv_rows, csv_spec, regression_data, toy_frame, toy_spec, write_csv

import retrofit
from retrofit.bounds import MAX_WORK, WORK_ENV
from retrofit.data import MIN_ROWS, DatasetError, DatasetSpec, clean, load_table, split, whole
from retrofit.data.prepare import TARGET_SCALE, check_column_names, check_target_scale
from retrofit.errors import RetrofitError, listing
from retrofit.hosts import get_path, make_regressor


def test_csv_with_a_duplicated_target_is_refused(tmp_path):
    """pandas reads `x,y,y` as x, y, y.1: the copy of the target would be a feature and leak into it."""
    spec = csv_spec(tmp_path, "\n".join(["x,y,y", *csv_rows()]))
    assert list(pd.read_csv(spec.options["path"]).columns) == ["x", "y", "y.1"]  # what would have been fitted
    with pytest.raises(DatasetError, match=r"uses column names more than once: \['y'\].*y -> y\.1"):
        load_table(spec, tmp_path)


def test_frame_with_duplicated_columns_is_refused():
    frame = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "y", "a"])
    with pytest.raises(DatasetError, match=r"more than once: \['a'\]"):
        clean(frame, DatasetSpec.from_mapping({"name": "t", "source": "csv", "path": "p", "target": "y"}))


@pytest.mark.parametrize(("header", "positions"), [(",x,y", r"\[0\]"), ("x, ,y", r"\[1\]")])
def test_csv_with_an_empty_column_name_is_refused(tmp_path, header, positions):
    """A blank header cell (e.g. a CSV written with its index) would become a feature named 'Unnamed: 0'."""
    spec = csv_spec(tmp_path, "\n".join([header, *csv_rows()]))
    with pytest.raises(DatasetError, match=rf"columns without a name, at positions {positions}.*index=False"):
        load_table(spec, tmp_path)


def test_column_name_checks_are_bounded():
    names = [f"c{i}" for i in range(500_000)] * 2
    with pytest.raises(DatasetError, match=r"and 499980 more \(500000 in all\)") as err:
        check_column_names("wide", names)
    assert len(str(err.value)) < 1_000
    assert listing(["a", "b"]) == "['a', 'b']"


def test_one_row_table_is_refused_for_its_rows_not_as_a_constant_target(tmp_path):
    path = tmp_path / "one.csv"
    pd.DataFrame({"x": [1.0], "y": [2.0]}).to_csv(path, index=False)
    spec = DatasetSpec.from_mapping({"name": "one", "source": "csv", "path": str(path), "target": "y"})
    with pytest.raises(DatasetError, match="1 usable rows; a train/test split needs at least 10") as err:
        load_table(spec, tmp_path)
    one_line(err)


@pytest.mark.parametrize("test_size, left", [(0.99, "leaves 0 of its 60 rows for training"), (0.001, "and 1 for")])
def test_a_test_size_that_leaves_a_side_too_small_is_refused_before_fitting(test_size, left):
    """60 rows at test_size=0.99 leave sklearn no train row (its own error was a traceback); at
    0.001 one test row remains, which is enough, so that one splits (the refusal said "at least 2 of
    each", which refused no such split)."""
    X, y = regression_data(seed=0, n=60, f=3)
    spec = DatasetSpec.from_mapping({"name": "small", "source": "csv", "path": "small.csv", "target": "y"})
    table = clean(pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y), spec)
    if test_size == 0.99:
        with pytest.raises(DatasetError, match=left) as err:
            split(table, seed=0, test_size=test_size)
        assert one_line(err).endswith("leaves at least 2 for training and 1 for testing (e.g. test_size=0.3)")
    else:
        assert len(split(table, seed=0, test_size=test_size).y_test) == 1


def _relative_rmse(X: np.ndarray, y: np.ndarray) -> float:
    """RMSE over the spread of the test rows of tiny_v3 fitted on the first 40 of 60 rows."""
    regressor = make_regressor(get_path("tiny_v3"), n_estimators=1, random_state=0).fit(X[:40], y[:40])
    return float(np.sqrt(np.mean((regressor.predict(X[40:]) - y[40:]) ** 2)) / np.std(y[40:]))


@pytest.mark.parametrize("scale", [1e-30, 1e-300, 1e160, -1e300])
def test_target_beyond_what_tabpfn_standardises_is_refused_with_the_reason(scale):
    """A target of spread 3.6e-30 gave a baseline RMSE 1e8 times its spread and ΔRMSE +116 %;
    one near 1e160 ended in tabpfn's `AssertionError: diff: nan`."""
    X, y = regression_data(n=60, f=3, curved=False)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y * scale)
    spec = DatasetSpec.from_mapping({"name": "s", "source": "csv", "path": "s.csv", "target": "y"})
    reason = "tabpfn adds 1e-20 to the spread" if abs(scale) < 1 else r"tabpfn standardises targets only up to 1e\+150"
    with pytest.raises(DatasetError, match=reason) as err:
        clean(frame, spec)
    one_line(err)
    estimator = retrofit.RetrofitRegressor("oa_only", n_estimators=1, device="cpu")
    with pytest.raises(RetrofitError, match=reason) as err:
        estimator.fit(X, y * scale)
    assert str(err.value).startswith("RetrofitRegressor.fit: y ")
    assert not hasattr(estimator, "regressor_")


def test_targets_and_inputs_at_the_edges_of_the_accepted_scales_give_the_unit_scale_numbers():
    """Inside `TARGET_SCALE` the relative RMSE is the unit-scale one; features at any finite scale too."""
    X, y = regression_data(n=60, f=3, curved=False)
    low, high = TARGET_SCALE
    unit = _relative_rmse(X, y)
    small, large = 2 * low / np.std(y), 0.5 * high / np.max(np.abs(y))
    for Xs, ys in ((X, y * small), (X, y * large), (X * 1e-300, y), (X * 1e300, y)):
        check_target_scale(ys, "y")
        assert abs(_relative_rmse(Xs, ys) - unit) <= 1e-6 * unit


def test_hitters_rows_without_salary_are_dropped_counted_and_logged(caplog, dataset_spec):
    with caplog.at_level(logging.INFO, logger="retrofit.data.prepare"):
        table = load_table(dataset_spec("hitters"), Path("."))
    assert table.n_missing_target == 59
    assert "dropped 59 of 322 rows without target 'Salary'" in caplog.text


def test_split_is_70_30_and_seeded(dataset_spec):
    table = load_table(dataset_spec("diabetes"), Path("."))
    a, b, c = split(table, 0), split(table, 0), split(table, 1)
    assert (len(a.y_train), len(a.y_test)) == (309, 133)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.y_test, c.y_test)


def test_categoricals_are_ordinal_encoded_on_train_rows_and_indexed():
    frame = toy_frame(60)
    frame.loc[frame.index[-1], "colour"] = "mauve"  # a level only one row has
    spec = DatasetSpec.from_mapping(
        {"name": "toy", "source": "csv", "path": "x", "target": "y", "categorical": ["code"]}
    )
    table = clean(frame, spec)
    assert table.categorical == ("colour", "code")
    mauve_in_test = 0
    for seed in range(20):
        data = split(table, seed)
        assert data.categorical_indices == (1, 2)
        train_codes = np.unique(data.X_train[:, 1])
        test_nans = int(np.isnan(data.X_test[:, 1]).sum())
        # Codes are learned on the training rows: the test-only level becomes NaN (missing).
        assert (len(train_codes), test_nans) in {(3, 1), (4, 0)}
        mauve_in_test += test_nans
    assert 0 < mauve_in_test < 20


def test_missing_feature_values_stay_nan():
    frame = toy_frame()
    frame.loc[frame.index[:5], "x"] = np.nan
    data = split(clean(frame, toy_spec("x")), 0)
    assert np.isnan(np.concatenate([data.X_train[:, 0], data.X_test[:, 0]])).sum() == 5


def test_a_table_whose_fit_is_over_the_work_bound_is_refused_before_encoding(tmp_path, monkeypatch):
    """A CSV of 100,000 rows with a 100,000-level text column fitted for hours with no word: its fit
    (70,000 fitted rows × 100,000 rows × 2 features = 1.4e10) is refused at the split in one line
    naming the work, the bound and the ways out; the rows it names fit, and so does a fit at the bound it names."""
    n = 100_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": [f"row{i}" for i in range(n)], "x": rng.normal(size=n), "y": rng.normal(size=n)})
    table = load_table(toy_spec(write_csv(tmp_path, frame)), tmp_path)
    monkeypatch.delenv(WORK_ENV, raising=False)
    with pytest.raises(DatasetError) as err:
        split(table, 0)
    assert one_line(err) == (
        "dataset 'toy': one fit on 70000 of 100000 rows × 2 features (1 categorical, 100000 levels) is 1.4e+10 "
        f"units of work (fitted rows × rows × features), over the bound of 2e+09 ({WORK_ENV}): keep at most 37796 "
        f"rows (a sweep's dataset.max_rows=37796), drop features, or raise the bound: {WORK_ENV}=14000000000"
    )
    assert MAX_WORK == 2 * 10**9
    small = clean(frame.iloc[:1000], toy_spec("x"))
    n_fit = 37796 - int(np.ceil(0.3 * 37796))
    assert n_fit * 37796 * 2 <= MAX_WORK < 1.001 * n_fit * 37796 * 2  # the rows named fit, and barely
    monkeypatch.setenv(WORK_ENV, str(700 * 1000 * 2 - 1))
    with pytest.raises(DatasetError, match=r"on 700 of 1000 rows .* 1.4e\+06 units .* bound of 1.4e\+06"):
        split(small, 0)
    with pytest.raises(DatasetError, match=r"on 1000 of 1000 rows"):
        whole(small)  # the fit explain makes on every row
    monkeypatch.setenv(WORK_ENV, str(700 * 1000 * 2))
    assert len(split(small, 0).y_train) == 700
    monkeypatch.setenv(WORK_ENV, "lots")
    with pytest.raises(RetrofitError, match=rf"^{WORK_ENV}='lots' must be a positive number"):
        split(small, 0)
    monkeypatch.setenv(WORK_ENV, "1")  # under any split's work: no row count to suggest (it said "at most 0 rows")
    with pytest.raises(DatasetError) as err:
        split(small, 0)
    assert one_line(err).endswith(f"no split of 10 rows or more is within it: raise the bound: {WORK_ENV}=1400000")


def test_max_rows_subsamples_with_the_seed():
    table = clean(toy_frame(100), toy_spec("x"))
    data = split(table, 3, max_rows=50)
    assert len(data.y_train) + len(data.y_test) == 50


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.assign(y=np.nan), "rows; a train/test split needs at least"),
        (lambda f: f.assign(y=1.5), "is constant"),
        (lambda f: f.assign(y=np.where(np.arange(len(f)) == 3, np.inf, f["y"])), "holds ±inf"),
        (lambda f: f.assign(x=np.where(np.arange(len(f)) == 3, -np.inf, f["x"])), "features ['x'] hold ±inf"),
        (lambda f: f.drop(columns=["y"]), "no target column 'y'"),
        (lambda f: f.iloc[: MIN_ROWS - 1], f"9 usable rows; a train/test split needs at least {MIN_ROWS}"),
        (lambda f: f.assign(y="high"), "is not numeric"),
    ],
    ids=[
        "all-target-missing",
        "constant-target",
        "inf-target",
        "inf-feature",
        "no-target",
        "too-few-rows",
        "text-target",
    ],
)
def test_bad_tables_raise_a_clear_error(tmp_path, change, message):
    path = write_csv(tmp_path, change(toy_frame()))
    with pytest.raises(DatasetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        split(load_table(toy_spec(path), tmp_path), 0)


def test_unknown_drop_and_categorical_columns_are_named(tmp_path):
    path = write_csv(tmp_path, toy_frame())
    with pytest.raises(DatasetError, match=r"cannot drop \['nope'\]"):
        load_table(toy_spec(path, drop=["nope"]), tmp_path)
    with pytest.raises(DatasetError, match=r"categorical columns \['nope'\]"):
        load_table(toy_spec(path, categorical=["nope"]), tmp_path)
