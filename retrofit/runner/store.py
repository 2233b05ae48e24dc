"""The unit store: one file per unit, named by its identity (`retrofit.runner.identity`).

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed); it
is named for people by its `retrofit.unit_key.UnitKey` (the key columns of `retrofit_rmse.csv`)
and identified by the digest of everything its numbers are computed from
(`retrofit.runner.identity`). Its file is `<runs_dir>/<identity>.json`; a unit is finished when
a valid file of its identity exists, and nothing else decides it. The file holds the row, its
`identity` and a `row_digest` of the row; a damaged one (unparsable, not an object, lacking a
column, not matching its digest, labelled as another unit) is never served. Writes are atomic
(`retrofit.io`): concurrent and interrupted runs leave whole files or none. This module stores
rows and reads them back; it neither builds nor reads a case (no torch, tabpfn or fitting).
"""

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.metrics import matched_deltas
from retrofit.results.record import COLUMNS, NUMERIC
from retrofit.unit_key import UnitKey, key_of

log = logging.getLogger(__name__)


def row_digest(row: Mapping[str, Any]) -> str:
    """sha256 of `row` as JSON (sorted keys, as it reads back from a unit file), first 16 hex digits."""
    return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()[:16]


def check_derived(row: Mapping[str, Any], path: Path) -> None:
    """RunnerError naming the first derived column of `row` (the unit file `path`) that its own raw
    columns do not give: a matched delta (`retrofit.metrics.MATCHED_DELTAS`, one formula for writing
    and reading) or a median time ratio outside its rounds' range."""
    for name, value in matched_deltas(row).items():
        if name in row and not _same(row[name], value):
            raise RunnerError(f"unit file {path} holds {name}={row[name]}, but its own columns give {value}")
    ratios = ("predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max")
    if all(name in row for name in ratios):
        ratio, low, high = (float(row[name]) for name in ratios)
        if not ((math.isnan(ratio) and math.isnan(low) and math.isnan(high)) or low <= ratio <= high):
            raise RunnerError(f"unit file {path} holds predict_time_ratio={ratio}, outside its rounds' [{low}, {high}]")


def _same(stored: Any, computed: float) -> bool:
    """Whether a stored number is the computed one (both NaN counts as the same)."""
    stored = float(stored)
    return stored == computed or (math.isnan(stored) and math.isnan(computed))


class UnitStore:
    """The unit files under `runs_dir`: a finished unit read back (verified), a unit written
    atomically. `columns`: the result columns every row must hold (those of `retrofit_rmse.csv`)."""

    def __init__(self, runs_dir: Path, columns: Iterable[str] = COLUMNS):
        self.runs_dir = Path(runs_dir)
        self.columns = tuple(columns)

    def path(self, identity: str) -> Path:
        return self.runs_dir / f"{identity}.json"

    def read(self, path: Path) -> dict[str, Any]:
        """The verified row of the unit file `path` (without its digest); RunnerError naming the
        file when it cannot be parsed, is not an object, does not match its digest or lacks a column."""
        try:
            row = json.loads(Path(path).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise RunnerError(f"unit file {path} is not valid JSON ({err})") from None
        except RecursionError:
            raise RunnerError(f"unit file {path} nests too deep to be a row") from None
        if not isinstance(row, dict):
            raise RunnerError(f"unit file {path} holds a JSON {type(row).__name__}, not a row")
        stored = row.pop("row_digest", None)
        if stored != row_digest(row):
            why = "has no row digest" if stored is None else "does not match its row digest (edited or damaged)"
            raise RunnerError(f"unit file {path} {why}")
        missing = [column for column in self.columns if column not in row]
        if missing:
            raise RunnerError(f"unit file {path} lacks the columns {', '.join(missing)}")
        numeric = [name for name in ("seed", *NUMERIC) if name in self.columns]
        text = [name for name in numeric if not isinstance(row[name], int | float | None)]
        if text:
            raise RunnerError(f"unit file {path} holds {text[0]}={row[text[0]]!r}, not a number")
        check_derived(row, path)
        return row

    def finished(self, identity: str, key: UnitKey | None = None) -> dict[str, Any] | None:
        """The stored row of the unit `identity` (named `key`) if its file is valid (`read`), carries
        that identity and is labelled as `key` (its host, dataset, seed, variant and hparams), else
        None; an invalid or mislabelled file is named in a warning (the unit is then recomputed)."""
        path = self.path(identity)
        if not path.is_file():
            return None
        try:
            row = self.read(path)
            if key is not None and key_of(row) != key:
                raise RunnerError(f"unit file {path} is labelled {key_of(row).label()}, not {key.label()}")
        except RunnerError as err:
            log.warning("%s; recomputing that unit", err)
            return None
        return row if row.get("identity") == identity else None

    def write(self, identity: str, row: Mapping[str, Any]) -> Path:
        """`row` with its `identity` and `row_digest` as the unit file of `identity`, atomically."""
        body = json.loads(json.dumps({**row, "identity": identity}, default=str))  # as it reads back
        body["row_digest"] = row_digest(body)
        return write_text_atomic(self.path(identity), json.dumps(body, indent=1, sort_keys=True) + "\n")
