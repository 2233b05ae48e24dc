"""A CSV dataset's first checks, with the standard library only, so that a job answers them before
pandas or any model library loads (`check_csv_command`) and the loader answers them alike: the file
exists (`csv_path`), its header is of a bounded width (`header`), and the target is a column of it
(`missing_target`, naming the closest)."""

import csv
import difflib
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from retrofit.bounds import MAX_COLUMNS, MAX_HEADER_CHARS
from retrofit.errors import DatasetError, bounded, listing

OTHER_SEPARATORS = (";", "\t", "|")
"""Column separators other than the comma: a header read as one column holding one of them is
refused (`header`), since pandas would read such a file as one text column in silence (and a
decimal comma as an index)."""
PATH_OVERRIDE = "dataset.path="
"""How the command line sets a CSV dataset's file (`dataset=csv dataset.path=... dataset.target=...`)."""


def path_on_command_line(overrides: Sequence[str]) -> bool:
    """Whether the command line's `overrides` set `dataset.path` (read from where the command started)."""
    return any(item.lstrip("+~").startswith(PATH_OVERRIDE) for item in overrides)


BINARY_FORMATS = {
    b"PK\x03\x04": (
        "a zip archive (an Excel .xlsx workbook is one)",
        "pandas: pd.read_excel(path).to_csv('table.csv', index=False)",
    ),
    b"\xd0\xcf\x11\xe0": (
        "an Excel .xls workbook (an OLE file)",
        "pandas: pd.read_excel(path).to_csv('table.csv', index=False)",
    ),
    b"PAR1": ("a Parquet file", "pandas: pd.read_parquet(path).to_csv('table.csv', index=False)"),
    b"\x80": (
        "a Python pickle",
        "pandas, if you trust its source: pd.read_pickle(path).to_csv('table.csv', index=False)",
    ),
    b"\x89HDF": ("an HDF5 file", "pandas: pd.read_hdf(path).to_csv('table.csv', index=False)"),
    b"\x1f\x8b": ("gzip-compressed", "gunzip -k {path}"),
    b"\xff\xfe": ("UTF-16 text", "iconv -f utf-16 -t utf-8 {path} > table.csv"),
    b"\xfe\xff": ("UTF-16 text", "iconv -f utf-16 -t utf-8 {path} > table.csv"),
}
"""The first bytes of the files most often given for a CSV that are no UTF-8 text: what each is and
what makes CSV text of it."""
PATH_FIX = "fix the path that names it (a dataset's `path`: in its YAML, or dataset.path=; `retrofit columns`: table=)"
"""Where a CSV file's path is given: a dataset's `path`, or the table the columns job describes."""
SNIFFED = 4096
"""The bytes of a CSV file looked at for binary data: CSV text never holds a NUL byte."""


def csv_path(dataset: str, path: str | Path, base_dir: Path) -> Path:
    """The file `path` names (`~` expanded; a relative path from `base_dir`); DatasetError naming
    `dataset` unless it is a regular file of text: a folder is named as one, a pipe or a device
    (/dev/zero, which would be read without end) as not a regular file, a binary file
    (`BINARY_FORMATS`, or a NUL byte in its first `SNIFFED` bytes) as what it is, with what makes
    CSV text of it (it was refused as text of a latin-1 byte, or read as columns named by its bytes)."""
    path = Path(path).expanduser()
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "is not a regular file" if path.exists() else "does not exist"
        raise DatasetError(f"dataset {dataset!r}: CSV file {path} {what}; {PATH_FIX}")
    try:
        with path.open("rb") as file:
            start = file.read(SNIFFED)
    except OSError:
        return path  # the loader says why it cannot be read
    kind, how = next((known for magic, known in BINARY_FORMATS.items() if start.startswith(magic)), (None, None))
    if kind is not None or b"\0" in start:
        kind, how = (
            kind or "binary data (it holds a NUL byte)",
            how or "e.g. pandas: pd.read_excel(path).to_csv('table.csv', index=False)",
        )
        raise DatasetError(
            f"dataset {dataset!r}: {path} is {kind}, not UTF-8 CSV text; "
            f"convert it: {how.format(path=shlex.quote(str(path)))}"
        )
    return path


def missing_target(dataset: str, target: str, columns: Sequence[object]) -> DatasetError:
    """The refusal of a `target` that is not one of `columns`, naming the closest column."""
    close = difflib.get_close_matches(str(target), [str(column) for column in columns], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DatasetError(f"dataset {dataset!r}: no target column {target!r}{hint}; columns: {listing(list(columns))}")


def header(dataset: str, path: Path) -> list[str] | None:
    """The first row of the CSV file `path` as written (a leading byte-order mark dropped, as pandas
    drops it), or None when it cannot be read as text (the loader then says why). At most
    `MAX_HEADER_CHARS` characters are read: DatasetError naming `dataset` for a header longer than
    that or of more than `MAX_COLUMNS` columns, before pandas, which would parse a header of any
    width (a million columns for a minute), and for a header that reads as one column holding
    another separator (`OTHER_SEPARATORS`)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as file:  # -sig: a byte-order mark is not text, as for pandas
            names = next(csv.reader(_header_lines(dataset, path, file)), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if len(names) > MAX_COLUMNS:
        raise _too_wide(dataset, path, f"has {len(names)} columns")
    separator = next((sep for sep in OTHER_SEPARATORS if len(names) == 1 and sep in names[0]), None)
    if separator is not None:
        raise DatasetError(
            f"dataset {dataset!r}: the header of {path} reads as the one column {bounded(repr(names[0]), 100)}, its "
            f"columns separated by {separator!r}; the harness reads commas: write it with commas "
            "(pandas: frame.to_csv(path, index=False))"
        )
    return names


def _header_lines(dataset: str, path: Path, file: TextIO) -> Iterator[str]:
    """The lines of `file` that `csv.reader` asks for (the header row's: more than one where a quoted
    name holds a line break), `MAX_HEADER_CHARS` characters in all; DatasetError past them."""
    left = MAX_HEADER_CHARS
    while line := file.readline(left + 1):
        if len(line) > left:
            raise _too_wide(dataset, path, f"runs past {MAX_HEADER_CHARS} characters")
        left -= len(line)
        yield line


def _too_wide(dataset: str, path: Path, what: str) -> DatasetError:
    return DatasetError(
        f"dataset {dataset!r}: the header of {path} {what}, wider than the {MAX_COLUMNS} columns a table may have "
        f"(retrofit.bounds.MAX_COLUMNS); keep the columns you need (e.g. cut -d, -f1-100 {path} > narrow.csv)"
    )


def check_csv_command(dataset: Mapping[str, Any], overrides: Sequence[str], base_dir: Path) -> None:
    """For a `source: csv` dataset whose file the command line names (`path_on_command_line`): its
    file exists and its target is a column of its header, each a DatasetError in one line naming
    the fix. Everything else about the dataset is checked where it is loaded."""
    path, target = dataset.get("path"), dataset.get("target")
    if dataset.get("source") != "csv" or not isinstance(path, str) or not path_on_command_line(overrides):
        return
    name = dataset.get("name") or Path(path).stem
    columns = header(name, csv_path(name, path, base_dir))
    if isinstance(target, str) and columns is not None and target not in columns:
        raise missing_target(name, target, columns)
