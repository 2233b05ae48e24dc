"""A run's end: the records of its cases' units, read from the store by identity and labelled as
its cases label them, written as results (`retrofit.results.aggregate`), shown on the console with
each host's noise floor, and checked against a reference when one was named.

A sweep names its units by its cases: building a case reads its data's and host file's digests
(no fit), so the records of a sweep are exactly the stored files of its cases' identities
(`sweep_records`), whatever else the store holds; a unit without one is named and nothing is written.
"""

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.measure.floor_table import OWN_FLOORS, floor_command, read_floors
from retrofit.record_guard import RECORD_DIR
from retrofit.results.aggregate import aggregate, headline, outputs
from retrofit.results.compare import Reference, verify
from retrofit.results.record import UnitRecord, frame_of
from retrofit.runner import console
from retrofit.runner.case import Case, stored_rows
from retrofit.runner.store import code_digest

FLOORS = RECORD_DIR / "noise_floor.csv"
"""Each shipped host's measured noise floor (`noise_floors`)."""


def noise_floors(*paths: Path) -> dict[tuple[str, str], float]:
    """Each (host, device)'s noise floor (`retrofit.measure.floor_table.read_floors`) from `paths`
    (none given: `results/noise_floor.csv`, written by `make noise-floor`, and `OWN_FLOORS`, where
    `python -m retrofit noise_floor` writes a user's own); where two files hold a host and device,
    the first one's floor is taken (the record's over a user's); {} for a missing file (there: floor
    not measured)."""
    floors: dict[tuple[str, str], float] = {}
    for path in reversed(paths or (FLOORS, OWN_FLOORS)):
        floors |= read_floors(path) if Path(path).is_file() else {}
    return floors


def floor_commands(
    frame: pd.DataFrame, floors: Mapping[tuple[str, str], float], host_paths: Mapping[str, Path] | None = None
) -> dict[tuple[str, str], str]:
    """(host, device) -> the command that measures its floor on the datasets of `frame` it ran on
    (`retrofit.measure.floor_table.floor_command`), for each one of `frame` without a floor;
    `host_paths` (host -> checkpoint, the run's cases') names a host's file, a shipped host's being
    its own option."""
    from retrofit.hosts import available, get_path

    paths = dict(host_paths or {})
    commands = {}
    for (host, device), rows in frame.groupby(["host", "device"], sort=True):
        if (host, device) not in floors:
            datasets = sorted(rows["dataset"].unique())
            shipped = host in available() and Path(paths.get(host, get_path(host))) == get_path(host)
            commands[host, device] = floor_command(host, device, datasets, None if shipped else paths.get(host, ""))
    return commands


def case_records(case: Case, rows: Sequence[Mapping[str, Any]]) -> list[UnitRecord]:
    """The records of `rows` (one per unit of `case`, in order, as `run_case` returns them),
    labelled as the case labels its units (a stored row is shared by every run of its unit)."""
    return [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in zip(case.units, rows, strict=True)]


def sweep_records(cases: Sequence[Case]) -> list[UnitRecord]:
    """The records of every unit of `cases` from the store, under their identities as the code,
    libraries and files are now; RunnerError naming a unit without a stored result (missing, or
    computed from anything else), so nothing partial is aggregated as if complete."""
    code_digest.cache_clear()  # the code as it is now, not as this process first read it
    records, missing = [], []
    for case in (replace(case) for case in cases):  # the host's and data's digests read afresh
        rows = stored_rows(case)
        missing += [key.label() for key, row in rows.items() if row is None]
        if not missing:
            records += case_records(case, list(rows.values()))
    if missing:
        raise RunnerError(
            f"{len(missing)} units of this run have no result in {cases[0].runs_dir} under their identity "
            f"(data, host file, settings, code, libraries), e.g. {missing[0]}; run it (finished units are reused)"
        )
    return records


def finish(
    results_dir: Path,
    records: Sequence[UnitRecord],
    log_files: str,
    reused: str,
    *,
    keep: bool = False,
    reference: Reference | None = None,
    notices: Sequence[str] = (),
    host_paths: Mapping[str, Path] | None = None,
) -> pd.DataFrame:
    """Write `records` into `results_dir` (`keep`: with the rows already there, as single runs
    accumulate), print the headline table, the files written, where the per-unit detail is
    (`log_files`) and how many units were reused (`reused`); with a `reference` (read before the
    run), check the run's own rows against it (`reproduction.txt`; RunnerError if they differ).
    `host_paths` (host -> checkpoint) completes the command that measures a missing noise floor."""
    frame = aggregate(results_dir, records, keep=keep)
    written = [results_dir / name for name in outputs(frame)]
    floors = noise_floors()
    commands = floor_commands(frame, floors, host_paths)
    console.report(headline(frame, floors, commands), written, log_files, notices, reused)
    if reference is not None:
        verify(results_dir, reference, frame_of(records) if keep else None)
    return frame
