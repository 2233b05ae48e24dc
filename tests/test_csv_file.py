"""A user's own CSV (`retrofit.data.csv_file`): a path and a target on the command line (`dataset=csv`),
or the same table as a DataFrame in memory, give one table; a missing key, column or file is named in
one line."""

import os
import pickle
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from refusals import one_line
from synthetic import csv_spec, houses, toy_frame, toy_spec

from retrofit.bounds import MAX_COLUMNS, MAX_HEADER_CHARS
from retrofit.data import DatasetError, DatasetSpec, frame_table, load_table
from retrofit.data.csv_file import check_csv_command


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


def test_error_listing_a_wide_tables_columns_is_bounded(tmp_path):
    """A malformed 100,000-column CSV once produced a message of hundreds of MB; it now lists 20 names
    (here at the widest header read, `MAX_COLUMNS`)."""
    n = MAX_COLUMNS
    spec = csv_spec(tmp_path, ",".join(f"c{i}" for i in range(n)) + "\n" + ",".join(["1"] * n) + "\n")
    with pytest.raises(DatasetError, match=rf"no target column 'y'; columns: .*'c19'\] and {n - 20} more") as err:
        load_table(spec, tmp_path)
    assert len(str(err.value)) < 1_000


@pytest.mark.parametrize(
    ("names", "what"),
    [
        ([f"c{i}" for i in range(10**6)], f"runs past {MAX_HEADER_CHARS} characters"),
        (["c"] * (MAX_COLUMNS + 1), f"has {MAX_COLUMNS + 1} columns"),
        (["x", '"a\nlong name"', "y" * MAX_HEADER_CHARS], f"runs past {MAX_HEADER_CHARS} characters"),
    ],
    ids=["million-columns", "one-too-many", "long-quoted-name"],
)
def test_a_header_far_too_wide_is_refused_before_pandas_reads_it(tmp_path, monkeypatch, hydra_compose, names, what):
    """A header of a million columns was parsed for over a minute before "1 usable rows"; at most
    `MAX_HEADER_CHARS` characters of it are read, by the command's first check and by the loader, and
    it is refused in one line; pandas never sees the file."""
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join(["1"] * len(names)) + "\n")
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: pytest.fail("pandas read the file"))
    expected = (
        f"dataset 'wide': the header of {path} {what}, wider than the {MAX_COLUMNS} columns a table may have "
        f"(retrofit.bounds.MAX_COLUMNS); keep the columns you need (e.g. cut -d, -f1-100 {path} > narrow.csv)"
    )
    with pytest.raises(DatasetError) as err:
        load_table(DatasetSpec.from_mapping({"source": "csv", "path": str(path), "target": "y"}), tmp_path)
    assert one_line(err) == expected
    overrides = [f"dataset.path={path}", "dataset.target=y"]
    with pytest.raises(DatasetError) as err:
        check_csv_command(csv_node(hydra_compose, *overrides), overrides, tmp_path)
    assert one_line(err) == expected


def test_a_csv_path_that_is_a_folder_is_named_as_one(tmp_path):
    (tmp_path / "houses.csv").mkdir()
    spec = DatasetSpec.from_mapping({"name": "h", "source": "csv", "path": "houses.csv", "target": "y"})
    with pytest.raises(
        DatasetError, match=rf"CSV file {tmp_path / 'houses.csv'} is a folder; fix the path that names it"
    ):
        load_table(spec, tmp_path)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_csv_path_that_is_a_pipe_or_a_device_is_named_as_not_a_regular_file(tmp_path, kind):
    """A FIFO or /dev/zero given as the CSV was reported as a file that "does not exist"."""
    path = tmp_path / "pipe.csv"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    spec = DatasetSpec.from_mapping({"name": "h", "source": "csv", "path": str(path), "target": "y"})
    with pytest.raises(DatasetError) as err:
        load_table(spec, tmp_path)
    assert (
        one_line(err)
        == f"dataset 'h': CSV file {path} is not a regular file; fix the path that names it (a dataset's `path`: "
        "in its YAML, or dataset.path=; `retrofit columns`: table=)"
    )


BINARY_FILES = {
    "xlsx": (b"PK\x03\x04\x14\x00\x06\x00", "a zip archive (an Excel .xlsx workbook is one)", "pd.read_excel(path)"),
    "parquet": (b"PAR1\x15\x00\x15\x1c", "a Parquet file", "pd.read_parquet(path)"),
    "pickle": (pickle.dumps(toy_frame()), "a Python pickle", "pd.read_pickle(path)"),
    "utf-16": ("y,a\n1,2\n".encode("utf-16"), "UTF-16 text", "iconv -f utf-16 -t utf-8 {path} > table.csv"),
    "nul": (b"y,a\x00\n1,2\n", "binary data (it holds a NUL byte)", "pd.read_excel(path)"),
}
"""A binary file given as a CSV: its bytes, what it is named as, and the conversion named."""


@pytest.mark.parametrize("name", list(BINARY_FILES))
def test_a_binary_file_given_as_a_csv_is_named_as_what_it_is_on_the_command_line_and_at_load(
    tmp_path, hydra_compose, name
):
    """An Excel or pickle file was refused as "not UTF-8 text" with an iconv from latin-1, a Parquet
    file as having "no target column 'y'; columns: ['PAR1\\x15...']"."""
    data, kind, how = BINARY_FILES[name]
    path = tmp_path / "table.csv"
    path.write_bytes(data)
    start = f"dataset 'table': {path} is {kind}, not UTF-8 CSV text; convert it: "
    overrides = [f"dataset.path={path}", "dataset.target=y"]
    with pytest.raises(DatasetError) as err:
        check_csv_command(csv_node(hydra_compose, *overrides), overrides, tmp_path)
    assert one_line(err).startswith(start) and how.format(path=path) in str(err.value), str(err.value)
    with pytest.raises(DatasetError) as loaded:
        load_table(
            DatasetSpec.from_mapping({"name": "table", "source": "csv", "path": str(path), "target": "y"}), tmp_path
        )
    assert str(loaded.value) == str(err.value)


def test_csv_path_relative_to_the_start_directory(tmp_path):
    (tmp_path / "data").mkdir()
    toy_frame().to_csv(tmp_path / "data" / "toy.csv", index=False)
    assert load_table(toy_spec("data/toy.csv"), tmp_path).X.shape == (40, 3)
    assert load_table(toy_spec(tmp_path / "data" / "toy.csv"), Path("/")).X.shape == (40, 3)


def test_missing_csv_names_the_file(tmp_path):
    with pytest.raises(DatasetError, match=r"toy\.csv does not exist"):
        load_table(toy_spec("nowhere/toy.csv"), tmp_path)


def test_a_csv_with_a_byte_order_mark_is_read_by_its_names_on_the_command_line_and_by_the_loader(
    hydra_compose, tmp_path
):
    """A file saved as "UTF-8 with BOM" (Excel's CSV UTF-8) was refused on the command line as having
    no target column 'price' (did you mean '\\ufeffprice'?), while pandas reads 'price'."""
    path = tmp_path / "houses.csv"
    houses().to_csv(path, index=False, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbfarea,")
    overrides = [f"dataset.path={path}", "dataset.target=area"]
    check_csv_command(csv_node(hydra_compose, *overrides), overrides, tmp_path)  # refused before
    spec = DatasetSpec.from_mapping(csv_node(hydra_compose, *overrides))
    assert list(load_table(spec, tmp_path).X.columns) == ["rooms", "zone", "price"]


@pytest.mark.parametrize(
    ("text", "separator"),
    [
        ("x;y\n" + "\n".join(f"{i};{i % 7}" for i in range(30)), ";"),
        ("x;y\n" + "1,5;2\n" * 30, ";"),
        ("x\ty\n1\t2\n", "\t"),
    ],
    ids=["semicolons", "decimal-commas", "tabs"],
)
def test_a_csv_separated_by_another_character_is_refused_naming_it(tmp_path, text, separator):
    """A file separated by semicolons read as one text column 'x;y' (with decimal commas, its cells split
    into an index) and was refused later as having no target column 'y', or described as one column."""
    spec = csv_spec(tmp_path, text)
    with pytest.raises(DatasetError) as err:
        load_table(spec, tmp_path)
    assert one_line(err) == (
        f"dataset 'toy': the header of {tmp_path / 'table.csv'} reads as the one column {'x' + separator + 'y'!r}, "
        f"its columns separated by {separator!r}; the harness reads commas: write it with commas "
        "(pandas: frame.to_csv(path, index=False))"
    )


def test_a_csv_that_is_not_utf8_names_the_byte_and_the_conversion(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(b"x,y\n" + "".join(f"caf\xe9 {i},{i}\n" for i in range(30)).encode("latin-1"))
    with pytest.raises(DatasetError) as err:
        load_table(toy_spec(path), tmp_path)
    assert one_line(err) == (
        f"dataset 'toy': {path} is not UTF-8 text (it holds the byte 0xe9); save it as UTF-8, e.g. iconv -f latin1 "
        f"-t utf-8 {path} > table_utf8.csv"
    )
