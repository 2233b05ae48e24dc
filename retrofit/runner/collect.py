"""The records of a sweep's own units: stored rows, labelled as the sweep's units label them.

A stored unit row is shared by every sweep that runs that unit; the labels that depend on the sweep
(the decomposition `arm`, `arm_extra`) come from the `UnitSpec` of the current sweep, so a unit
some earlier sweep ran as an arm is not an arm here unless this sweep says so.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from retrofit.errors import RunnerError
from retrofit.runner.case import Case, stored_rows
from retrofit.runner.record import UnitRecord


def case_records(case: Case, rows: Sequence[Mapping[str, Any]]) -> list[UnitRecord]:
    """The records of `rows` (one per unit of `case`, in order, as `run_case` returns them)."""
    return [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in zip(case.units, rows, strict=True)]


def sweep_records(cases: Sequence[Case]) -> list[UnitRecord]:
    """The records of every unit of `cases` from the unit store; RunnerError naming a unit without a
    current result (so nothing partial is aggregated as if complete)."""
    records, missing = [], []
    for case in cases:
        stored = stored_rows(case)
        missing += [str(key.relpath()) for key, row in stored.items() if row is None]
        if not missing:
            records += case_records(case, list(stored.values()))
    if missing:
        raise RunnerError(
            f"{len(missing)} units of this sweep have no current result, e.g. {missing[0]}; rerun the sweep"
        )
    return records
