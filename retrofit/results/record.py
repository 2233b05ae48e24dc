"""The one results row of a unit, typed: `UnitRecord`'s fields are the columns of `retrofit_rmse.csv`.

This is the only place that schema lives, and a record carries everything the aggregation needs:
what ran (`KEY`; `hparams` as sorted `k=v,...`; the decomposition labels `arm`, `arm_extra`), the
settings the patched model used (`tau`: the median tau its prediction used, NaN for the baseline;
`tau_rule`, `tau_c`, `eps_den`, `eps_mode`), the numbers (RMSE, NLL in nats, CRPS, 90 % coverage
as a fraction, of the variant and the baseline, their matched deltas: `delta_rmse_pct` and
`delta_crps_pct` in %, `delta_nll` in nats, `delta_coverage_90` a fraction; predict and fit
seconds and predict-time ratios), the case's sizes and settings, `commit` / `date`, and what the
numbers come from (`SETTINGS`, `INPUTS`, `IDENTITY`: the timing settings of the times shown, the
host file's and data's digests, tabpfn's version, the `machine`) and, for a timed unit, the `load`
it was timed under (the 1-minute load average per core; NaN untimed).

The first 34 columns are the published CSV contract (names and order kept); new columns are
appended at the end.
"""

import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from retrofit.errors import RunnerError

if TYPE_CHECKING:  # pandas only where frames are built
    import pandas as pd


@dataclass(frozen=True)
class UnitRecord:
    """One unit's row (see the module docstring); NaN stands for a number that does not apply."""

    dataset: str
    seed: int
    variant: str
    host: str
    device: str
    n_train: int
    n_test: int
    n_features: int
    rmse: float
    baseline_rmse: float
    delta_rmse_pct: float
    nll: float
    baseline_nll: float
    delta_nll: float
    crps: float
    baseline_crps: float
    delta_crps_pct: float
    coverage_90: float
    baseline_coverage_90: float
    delta_coverage_90: float
    tau: float
    tau_c: float
    eps_den: float
    eps_mode: str
    predict_seconds: float
    baseline_predict_seconds: float
    predict_time_ratio: float
    predict_time_ratio_min: float
    predict_time_ratio_max: float
    fit_seconds: float
    n_categorical: int
    n_missing_target: int
    n_estimators: int
    hparams: str
    tau_rule: str = ""
    arm: str = ""
    arm_extra: bool = False
    commit: str = ""
    date: str = ""
    test_size: float = math.nan
    precision: str = ""
    threads: int = 0
    timing_rounds: int = 0
    timing_members: int = 0
    host_digest: str = ""
    data_digest: str = ""
    tabpfn_version: str = ""
    machine: str = ""
    load: float = math.nan

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
KEY = ["host", "dataset", "seed", "variant", "hparams"]
"""The columns that identify a unit."""
SETTINGS = ["n_estimators", "device", "test_size", "precision", "threads", "host_digest"]
"""The columns of settings that change a number: rows that differ in one are never pooled."""
INPUTS = ["host_digest", "data_digest"]
"""The columns naming the bytes a row was computed from: a row whose inputs differ from a reference's
was recomputed from changed inputs (`retrofit.results.compare`)."""
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
"""Every numeric or flag column but the key's (a text value in one is refused by name: `retrofit.results.compare`)."""
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


def hparams_text(hparams: Mapping[str, Any] | str | None, prefix: str = "") -> str:
    """A unit's hyper-parameter overrides as sorted, flattened `k=v,...` (`tau.c=0.01,tau.mode=...`)."""
    if not isinstance(hparams, Mapping):
        return _typed(str, hparams)
    items = []
    for name, value in hparams.items():
        items += (
            [hparams_text(value, f"{prefix}{name}.")] if isinstance(value, Mapping) else [f"{prefix}{name}={value}"]
        )
    return ",".join(sorted(item for part in items for item in part.split(",") if item))


def frame_of(records: Sequence["UnitRecord | Mapping[str, Any]"]) -> "pd.DataFrame":
    """Records (or rows, see `UnitRecord.from_row`) as a frame with `COLUMNS`, one row per unit (a
    unit listed twice, as by two jobs sharing a baseline, counts once), sorted by `KEY`."""
    import pandas as pd

    typed = [r if isinstance(r, UnitRecord) else UnitRecord.from_row(r) for r in records]
    frame = pd.DataFrame([asdict(r) for r in typed], columns=COLUMNS)
    return frame.drop_duplicates(KEY, keep="last").sort_values(KEY, ignore_index=True)


def read_records(path: Path) -> list[UnitRecord]:
    """The records of the CSV at `path`; RunnerError if it is not there."""
    import pandas as pd

    if not Path(path).is_file():
        raise RunnerError(f"{path} does not exist; pass a retrofit_rmse.csv a sweep wrote")
    return [UnitRecord.from_row(row) for row in pd.read_csv(path, keep_default_na=True).to_dict("records")]


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
