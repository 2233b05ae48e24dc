"""The reproduction check: a fresh `retrofit_rmse.csv` against the reference it must reproduce.

`verify` is the unit diff (`retrofit.results.unit_diff.diff_units`) of a fresh `retrofit_rmse.csv`
(A) with a `Reference` (B: `read_reference`, the working tree's file or, with a commit, as committed
there, read before the run writes). It fails on a differing row, a numeric column in one file only
and an extra row; rows only in the reference are a subset said as such unless every row is required
(`Reference.require_all`, a rewrite of the record). With `grid_changed=true`, new and dropped rows
are listed instead. The line names the machines of both sides; `reproduction.txt` holds the
largest difference per column. On one machine the CPU path is deterministic (max rel |Δ| 0);
across CPUs float32 kernels differ in the last bits, which `Tolerances` absorb.

The unit diff's and the reading's public names are importable from here too.
"""

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.results.across_devices import FLOOR_COLUMNS, across_devices
from retrofit.results.results_csv import Reference, keyed, read_reference, read_results
from retrofit.results.unit_diff import TIMES, TOLERANCES, Tolerances, UnitDiff, counted, diff_units
from retrofit.unit_key import label

__all__ = [
    "FLOOR_COLUMNS",
    "TIMES",
    "TOLERANCES",
    "Reference",
    "Tolerances",
    "UnitDiff",
    "across_devices",
    "check",
    "counted",
    "diff_units",
    "keyed",
    "machines_of",
    "read_reference",
    "read_results",
    "require_covered",
    "verify",
]


def machines_of(frame: pd.DataFrame) -> str:
    """The machines (`machine` column) that computed the rows of `frame`, or "a machine not recorded"."""
    named = sorted({m for m in frame.get("machine", pd.Series(dtype=str)).dropna().astype(str) if m})
    return " + ".join(named) if named else "a machine not recorded"


def check(new: pd.DataFrame, reference: Reference | pd.DataFrame) -> UnitDiff:
    """`diff_units` of `new` (rows of `retrofit_rmse.csv`) with `reference` (a bare frame: read from
    memory), as a reproduction check (`UnitDiff.ok`, `UnitDiff.line`)."""
    reference = reference if isinstance(reference, Reference) else Reference(reference)
    comparison = diff_units(new, reference.frame, names=("new", "reference"))
    return replace(comparison, reference=reference, machines=(machines_of(new), machines_of(reference.frame)))


def verify(results_dir: Path, reference: Reference | pd.DataFrame, new: pd.DataFrame | None = None) -> UnitDiff:
    """`check` `new` (default: `<results_dir>/retrofit_rmse.csv`) against `reference`, print the line
    and write it with the largest difference per column to `<results_dir>/reproduction.txt`.
    RunnerError (a non-zero exit in an entry point) unless it reproduced."""
    new = read_results(Path(results_dir) / "retrofit_rmse.csv", "the new table") if new is None else new
    outcome = check(new, reference)
    report = f"{outcome.line()}\n\n## Largest difference per column\n\n{outcome.largest()}\n"
    write_text_atomic(Path(results_dir) / "reproduction.txt", report)
    print(outcome.line())
    if not outcome.ok:
        raise RunnerError(f"not reproduced ({outcome.line()}); if the change is intended, commit the new CSV")
    return outcome


def require_covered(reference: Reference | None, keys: Iterable[Sequence[Any]]) -> None:
    """Before a sweep runs: when `reference` requires every row (a record run), RunnerError unless the
    sweep's unit `keys` (`record.KEY` tuples) cover them all, so that a partial grid never rewrites
    the record. With `grid_changed`, RunnerError when the sweep's rows are exactly the reference's."""
    if reference is None or not (reference.require_all or reference.grid_changed):
        return
    ran, rows = set(map(tuple, keys)), keyed(reference.frame, "reference").index
    if reference.grid_changed and ran == set(rows):
        raise RunnerError(
            f"grid_changed=true, but this sweep runs exactly the {len(rows)} rows of {reference.source}; "
            "drop grid_changed (make retrofit without GRID_CHANGED=1)"
        )
    absent = [] if reference.grid_changed else [key for key in rows if key not in ran]
    if absent:
        raise RunnerError(
            f"this sweep would not rerun {len(absent)} of the {len(reference.frame)} rows of "
            f"{reference.source}, e.g. {label(absent[0])}; the record is rewritten only by the whole grid "
            "(make retrofit; when the grid itself changed on purpose, make retrofit GRID_CHANGED=1)"
        )
