"""The one results row of a unit, typed: `UnitRecord`'s fields are the columns of `retrofit_rmse.csv`.

This is the only place that schema lives: each field carries its unit and meaning (`column`;
`COLUMN_DOCS`, rendered by `retrofit.results.dictionary` into docs/data_dictionary.md), and a
record carries everything the aggregation needs: what ran (`KEY`), the settings the patched model
used, the numbers of the variant and of the stock host with their matched deltas, the case's sizes
and settings, `commit` / `date`, and what the numbers come from (`SETTINGS`, `INPUTS`, `IDENTITY`).

The first 34 columns are the published CSV contract (names and order kept); new columns are
appended at the end.
"""

import csv
import math
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from retrofit.errors import RunnerError, bounded, listing
from retrofit.labels import DEVICE_DOC
from retrofit.unit_key import KEY, hparams_text

if TYPE_CHECKING:  # pandas only where frames are built
    import pandas as pd


def column(unit: str, doc: str, default: Any = MISSING) -> Any:
    """A `UnitRecord` field documented as a column: its `unit` and what it means (`doc`)."""
    return field(default=default, metadata={"unit": unit, "doc": doc})


def column_docs(schema: type) -> dict[str, tuple[str, str]]:
    """Column -> (unit, meaning) of a dataclass whose fields are `column`s, in field order."""
    return {f.name: (f.metadata["unit"], f.metadata["doc"]) for f in fields(schema)}


@dataclass(frozen=True)
class UnitRecord:
    """One unit's row (see the module docstring); NaN stands for a number that does not apply."""

    dataset: str = column("label", "dataset name (the `name` of its dataset config)")
    seed: int = column("integer", "split and `random_state` seed of the case (TabArena's fold)")
    variant: str = column("label", "retrofit variant run (`baseline`: the frozen stock host, unpatched)")
    host: str = column(
        "label", "host label (`host.name`); rows of two checkpoints with one label differ in `host_digest`"
    )
    device: str = column(*DEVICE_DOC)
    n_train: int = column("rows", "training rows of the split")
    n_test: int = column("rows", "test rows of the split (scored)")
    n_features: int = column("count", "feature columns of the table")
    rmse: float = column("target units", "root mean squared error of the variant's mean prediction on the test rows")
    baseline_rmse: float = column("target units", "the same for the stock host on the same case")
    delta_rmse_pct: float = column("%", "matched RMSE change: 100 · (rmse − baseline_rmse) / baseline_rmse")
    nll: float = column("nats", "mean negative log-likelihood of the test targets under the predictive distribution")
    baseline_nll: float = column("nats", "the same for the stock host")
    delta_nll: float = column("nats", "matched NLL change: nll − baseline_nll")
    crps: float = column("target units", "mean continuous ranked probability score of the predictive distribution")
    baseline_crps: float = column("target units", "the same for the stock host")
    delta_crps_pct: float = column("%", "matched CRPS change: 100 · (crps − baseline_crps) / baseline_crps")
    coverage_90: float = column("fraction", "share of test targets inside the central 90 % predictive interval")
    baseline_coverage_90: float = column("fraction", "the same for the stock host")
    delta_coverage_90: float = column(
        "fraction", "coverage_90 − baseline_coverage_90 (a fraction: the tables show it ×100, in points)"
    )
    tau: float = column("squared hidden norm", "median tau the variant's prediction used (NaN for the baseline)")
    tau_c: float = column(
        "dimensionless", "c of the calibrated tau rule, tau = c · median ||h||² (NaN unless calibrated)"
    )
    eps_den: float = column("dimensionless", "the sink's eps_den of OAttention (NaN for the baseline)")
    eps_mode: str = column("label", "the sink's mode: `absolute` or `relative` (empty for the baseline)")
    predict_seconds: float = column("s", "median wall seconds of one timed predict call (NaN untimed)")
    baseline_predict_seconds: float = column("s", "the stock host's predict seconds on the same case")
    predict_time_ratio: float = column(
        "ratio", "median over timing rounds of predict seconds / the stock host's in the same round"
    )
    predict_time_ratio_min: float = column("ratio", "smallest per-round time ratio")
    predict_time_ratio_max: float = column("ratio", "largest per-round time ratio")
    fit_seconds: float = column("s", "wall seconds of the stock host's fit on the training rows")
    n_categorical: int = column("count", "categorical feature columns")
    n_missing_target: int = column("rows", "rows dropped because their target was missing")
    n_estimators: int = column("count", "ensemble members of the fitted regressor")
    hparams: str = column(
        "text", "the unit's hyper-parameter overrides as sorted `k=v,...` (empty: the variant's defaults)"
    )
    tau_rule: str = column(
        "text", "the tau rule as applied: `c=<c> (calibrated)` or `<value> (absolute)`; empty for the baseline", ""
    )
    arm: str = column("label", "decomposition arm (presence × sink) of the unit; empty outside the decomposition", "")
    arm_extra: bool = column("flag", "true for a decomposition-only unit, left out of the main table", False)
    commit: str = column("git commit", "the package checkout's commit (`+dirty`: with uncommitted changes)", "")
    date: str = column("UTC ISO 8601", "when the row was computed", "")
    test_size: float = column("fraction", "share of the table's rows held out as test rows", math.nan)
    precision: str = column("label", "floating-point precision of the forward (`float32`, ...)", "")
    threads: int = column("count", "torch threads of the case", 0)
    timing_rounds: int = column("count", "interleaved timing rounds behind the times (0: untimed)", 0)
    timing_members: int = column("count", "ensemble members of the regressor the timing ran on (0: untimed)", 0)
    host_digest: str = column("sha256, 16 hex", "digest of the host checkpoint file's bytes", "")
    data_digest: str = column(
        "sha256, 16 hex or text", "digest of the data file's bytes, or the loader and its package version", ""
    )
    tabpfn_version: str = column("version", "installed tabpfn version", "")
    machine: str = column("text", "CPU model, numpy's BLAS kernel and torch's SIMD level of the computing machine", "")
    load: float = column("load per core", "1-minute load average per CPU core while timed (NaN untimed)", math.nan)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], **labels: Any) -> "UnitRecord":
        """The record of a unit file's row or a CSV row (`labels`, e.g. `arm=...`, replace its own):
        extra keys (the unit's fingerprint) are ignored, None / empty cells become NaN or "",
        `hparams` given as a mapping becomes `k=v,...`. RunnerError naming a missing column."""
        row = {**row, **labels}
        missing = [f.name for f in fields(cls) if f.name not in row and f.name not in _OPTIONAL]
        if missing:
            raise RunnerError(f"a results row lacks the columns {missing}; recompute it (overwrite=true)")
        values = {}
        for name, kind in _TYPES.items():
            value = row.get(name, _OPTIONAL.get(name))
            values[name] = hparams_text(value) if name == "hparams" else _typed(kind, value)
        return cls(**values)

    def labelled(self, arm: str, arm_extra: bool) -> "UnitRecord":
        """This record as a unit of the current sweep labels it (a stored row's labels are not kept)."""
        return replace(self, arm=arm, arm_extra=arm_extra)


COLUMNS = [f.name for f in fields(UnitRecord)]
"""The columns of `retrofit_rmse.csv`, in order."""
COLUMN_DOCS = column_docs(UnitRecord)
"""Column -> (unit, meaning) of `retrofit_rmse.csv`, read off the fields."""
SETTINGS = ["n_estimators", "device", "test_size", "precision", "threads", "host_digest"]
"""The columns of settings that change a number: rows that differ in one are never pooled."""
INPUTS = ["host_digest", "data_digest"]
"""The columns naming the bytes a row was computed from: a row whose inputs differ from a reference's
was recomputed from changed inputs (`retrofit.results.reproduction`)."""
IDENTITY = [
    "test_size",
    "precision",
    "threads",
    "timing_rounds",
    "timing_members",
    *INPUTS,
    "tabpfn_version",
    "machine",
    "load",
]
"""The appended columns that say what a row was computed from (not results: never compared as such)."""
NUMERIC = [name for name, kind in get_type_hints(UnitRecord).items() if kind in (int, float, bool) and name not in KEY]
"""Every numeric or flag column but the key's (a text value in one is refused by name:
`retrofit.results.reproduction`)."""
_TYPES = get_type_hints(UnitRecord)
_OPTIONAL = {f.name: f.default for f in fields(UnitRecord) if f.default is not MISSING}
"""The appended columns and their blank values (an older file lacks them)."""


def _typed(kind: type, value: Any) -> Any:
    """`value` as `kind`: None / NaN / "" become NaN for a float, "" for a string."""
    blank = value is None or (isinstance(value, float) and math.isnan(value)) or value == ""
    if kind is float:
        return math.nan if blank else float(value)
    if kind is str:
        return "" if blank else str(value)
    if kind is bool:
        return False if blank else str(value).lower() in ("true", "1")
    return int(value)


def frame_of(records: Sequence["UnitRecord | Mapping[str, Any]"]) -> "pd.DataFrame":
    """Records (or rows, see `UnitRecord.from_row`) as a frame with `COLUMNS`, one row per unit (a
    unit listed twice, as by two jobs sharing a baseline, counts once), sorted by `KEY`."""
    import pandas as pd

    typed = [r if isinstance(r, UnitRecord) else UnitRecord.from_row(r) for r in records]
    frame = pd.DataFrame([asdict(r) for r in typed], columns=COLUMNS)
    return frame.drop_duplicates(KEY, keep="last").sort_values(KEY, ignore_index=True)


def read_records(path: Path) -> list[UnitRecord]:
    """The records of the CSV at `path` (a sweep's results_dir / `retrofit_rmse.csv`); RunnerError
    naming the folder if it is not there, and RunnerError naming it as
    damaged, with the command that moves it aside, where it is not a whole table (`_damage`): a file
    cut mid-row would otherwise read as rows with empty settings."""
    import pandas as pd

    if not Path(path).is_file():
        folder = Path(path).parent
        what = "does not exist" if not folder.is_dir() else f"holds no {Path(path).name}, so no sweep wrote there"
        raise RunnerError(
            f"{folder} {what}; pass results_dir=<the results_dir of a sweep that ran> (e.g. outputs/quick, which "
            "make quick writes)"
        )
    damage = _damage(Path(path))
    if damage is None:
        try:
            frame = pd.read_csv(path, keep_default_na=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
            damage = bounded(str(err).strip(), 200)
        else:
            records, damage = _records_or_damage(frame)
            if damage is None:
                return records
    aside = f"{path}.damaged"
    raise RunnerError(
        f"{path} is damaged ({damage}); move it aside, `mv {shlex.quote(str(path))} {shlex.quote(aside)}`, and "
        "rerun each command that wrote there: its rows come back from its stored units"
    )


def _records_or_damage(frame: "pd.DataFrame") -> tuple[list[UnitRecord], str | None]:
    """The records of `frame` (a CSV's rows) and None, or no records and what makes it no
    `retrofit_rmse.csv`: a header without its columns, a cell that is not of its column's type."""
    missing = [name for name in COLUMNS if name not in frame.columns and name not in _OPTIONAL]
    if missing:
        return [], f"its header lacks the columns {listing(missing)}"
    try:
        return [UnitRecord.from_row(row) for row in frame.to_dict("records")], None
    except ValueError as err:  # a cell _typed cannot read
        return [], bounded(f"a cell is not of its column's type: {err}", 200)


def _damage(path: Path) -> str | None:
    """What makes the CSV at `path` not a whole table, or None: text that is not UTF-8, a last line
    without its line break (pandas ends every row with one), or a row with more or fewer fields than
    the header."""
    try:
        with path.open(newline="", encoding="utf-8") as file:
            rows = csv.reader(file)
            width = len(next(rows, []))
            for row in rows:
                if len(row) != width:
                    return f"line {rows.line_num} has {len(row)} fields, the header {width}"
    except UnicodeDecodeError as err:
        return f"not UTF-8 text ({err.reason})"
    except csv.Error as err:
        return f"not CSV: {err}"
    with path.open("rb") as file:
        file.seek(max(path.stat().st_size - 1, 0))
        whole = file.read(1) in (b"\n", b"")
    return None if whole else "it ends mid-row, without a line break after its last row"


@cache
def commit() -> str:
    """The git commit of this package's checkout (short, `+dirty` when the tree has changes), or ""."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        )
    except OSError:
        return ""
    if head.returncode != 0:
        return ""
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def stamp() -> dict[str, str]:
    """`commit` and `date` (UTC, ISO 8601 to the second) of a row computed now."""
    return {"commit": commit(), "date": datetime.now(UTC).isoformat(timespec="seconds")}
