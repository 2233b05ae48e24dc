"""A CSV dataset's first checks, with the standard library only, so that a job answers them before
pandas or any model library loads (`check_csv_command`) and the loader answers them alike: the file
exists (`csv_path`), and the target is a column of its header (`missing_target`, naming the closest)."""

import csv
import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrofit.errors import DatasetError, listing

PATH_OVERRIDE = "dataset.path="
"""How the command line sets a CSV dataset's file (`dataset=csv dataset.path=... dataset.target=...`)."""


def path_on_command_line(overrides: Sequence[str]) -> bool:
    """Whether the command line's `overrides` set `dataset.path` (read from where the command started)."""
    return any(item.lstrip("+~").startswith(PATH_OVERRIDE) for item in overrides)


def csv_path(dataset: str, path: str | Path, base_dir: Path) -> Path:
    """The file `path` names (`~` expanded; a relative path from `base_dir`); DatasetError naming
    `dataset` unless it is a file."""
    path = Path(path).expanduser()
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise DatasetError(
            f"dataset {dataset!r}: CSV file {path} {'is a folder' if path.is_dir() else 'does not exist'}; "
            "fix `path` (in its YAML, or dataset.path=)"
        )
    return path


def missing_target(dataset: str, target: str, columns: Sequence[object]) -> DatasetError:
    """The refusal of a `target` that is not one of `columns`, naming the closest column."""
    close = difflib.get_close_matches(str(target), [str(column) for column in columns], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DatasetError(f"dataset {dataset!r}: no target column {target!r}{hint}; columns: {listing(list(columns))}")


def header(path: Path) -> list[str] | None:
    """The first row of the CSV file `path` as written, or None when it cannot be read as text
    (the loader then says why)."""
    try:
        with path.open(newline="", encoding="utf-8") as file:
            return next(csv.reader(file), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def check_csv_command(dataset: Mapping[str, Any], overrides: Sequence[str], base_dir: Path) -> None:
    """For a `source: csv` dataset whose file the command line names (`path_on_command_line`): its
    file exists and its target is a column of its header, each a DatasetError in one line naming
    the fix. Everything else about the dataset is checked where it is loaded."""
    path, target = dataset.get("path"), dataset.get("target")
    if dataset.get("source") != "csv" or not isinstance(path, str) or not path_on_command_line(overrides):
        return
    name = dataset.get("name") or Path(path).stem
    columns = header(csv_path(name, path, base_dir))
    if isinstance(target, str) and columns is not None and target not in columns:
        raise missing_target(name, target, columns)
