"""A user's own table without a dataset YAML: a CSV path and a target on the command line
(`dataset=csv`), and a DataFrame in the Python API (`retrofit.compare`), both the sweep's matched
comparison."""

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf
from processes import run_python

import retrofit
from retrofit.data import DatasetError, DatasetSpec, frame_table, load_table
from retrofit.errors import RetrofitError


def houses(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A small table with a text column and a numeric code, its target `price` a curve of both."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"area": rng.normal(size=n), "rooms": rng.integers(1, 5, size=n), "zone": rng.choice(["a", "b", "c"], size=n)}
    )
    return frame.assign(price=2 * frame.area + frame.rooms**0.5 + (frame.zone == "a") + 0.1 * rng.normal(size=n))


def csv_node(hydra_compose, *overrides: str) -> dict:
    return OmegaConf.to_container(hydra_compose("sweep", ["dataset=csv", *overrides]).dataset, resolve=True)


def test_a_csv_on_the_command_line_is_named_by_its_stem_and_read_from_the_start_directory(hydra_compose, tmp_path):
    (tmp_path / "data").mkdir()
    houses().to_csv(tmp_path / "data" / "my_houses.csv", index=False)
    spec = DatasetSpec.from_mapping(csv_node(hydra_compose, "dataset.path=data/my_houses.csv", "dataset.target=price"))
    assert (spec.name, spec.source, spec.target, spec.options) == (
        "my_houses",
        "csv",
        "price",
        {"path": "data/my_houses.csv"},
    )
    table = load_table(spec, tmp_path)
    assert table.X.shape == (60, 3) and table.categorical == ("zone",)
    named = csv_node(hydra_compose, "dataset.path=data/my_houses.csv", "dataset.target=price", "dataset.name=flats")
    assert DatasetSpec.from_mapping(named).name == "flats"
    dropped = csv_node(hydra_compose, "dataset.path=data/my_houses.csv", "dataset.target=price", "dataset.drop=[rooms]")
    assert list(load_table(DatasetSpec.from_mapping(dropped), tmp_path).X.columns) == ["area", "zone"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["dataset.target=price"], "key 'path' is missing.*dataset=csv dataset.path=<file.csv> dataset.target="),
        (["dataset.path=my_houses.csv"], "dataset 'my_houses': key 'target' is missing"),
        (["dataset.path='my houses.csv'", "dataset.target=price"], "'my houses' is not a label.*dataset.name=<label>"),
    ],
)
def test_a_csv_on_the_command_line_missing_a_key_says_what_to_add(hydra_compose, overrides, message):
    with pytest.raises(DatasetError, match=message) as err:
        DatasetSpec.from_mapping(csv_node(hydra_compose, *overrides))
    assert "\n" not in str(err.value)


def test_a_frame_in_memory_is_the_table_its_csv_file_gives(tmp_path):
    houses().to_csv(tmp_path / "houses.csv", index=False)
    from_file = load_table(
        DatasetSpec.from_mapping({"source": "csv", "path": "houses.csv", "target": "price"}), tmp_path
    )
    in_memory = frame_table(pd.read_csv(tmp_path / "houses.csv"), "price", name="houses")
    pd.testing.assert_frame_equal(in_memory.X, from_file.X)
    pd.testing.assert_series_equal(in_memory.y, from_file.y)
    assert in_memory.categorical == from_file.categorical == ("zone",)
    with pytest.raises(DatasetError, match="no target column 'cost'"):
        frame_table(houses(), "cost")


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
