"""Tables from a dataset spec or a DataFrame in memory, cleaned by the same rules
(`retrofit.data.prepare.clean`)."""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.data.prepare import Table, clean
from retrofit.data.sources import load_frame
from retrofit.data.spec import DatasetSpec, check_not_one_name
from retrofit.errors import DatasetError
from retrofit.labels import check_label

IN_MEMORY = "frame"
"""The `source` of a table handed over in memory (`frame_table`): nothing to load."""


def load_table(spec: DatasetSpec, base_dir: Path) -> Table:
    """Load `spec` from its source and clean it (see `retrofit.data.prepare`)."""
    return clean(load_frame(spec, base_dir), spec)


def frame_table(frame: pd.DataFrame, target: str, *, name: str = "frame", categorical: Sequence[str] = ()) -> Table:
    """`frame` (a DataFrame in memory) cleaned by the rules of a dataset config (`clean`): its
    column `target` is predicted from the others, text columns and those in `categorical` are
    categorical. The same table read from a CSV file (`source: csv`) gives the same `Table`.
    DatasetError naming the fix for a frame `clean` refuses, a `name` that is not a label or a
    `categorical` given as one string."""
    if not isinstance(frame, pd.DataFrame):
        raise DatasetError(f"expected a pandas DataFrame, got {type(frame).__name__}; wrap it: pd.DataFrame(...)")
    check_label("dataset name", name, DatasetError)
    check_not_one_name(name, "categorical", categorical)
    return clean(frame, DatasetSpec(name, IN_MEMORY, target, categorical=tuple(categorical)))
