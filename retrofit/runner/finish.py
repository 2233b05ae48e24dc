"""A run's end: the units of its cases read back from the unit store, written as results and shown.

`finish`: the records of a run's cases' units, read by the identities its cases computed
(`sweep_records`: exactly those files, whatever else the store holds; a unit without one is named
and nothing is written) and labelled as its cases label them, written as results
(`retrofit.results.run_files`), shown on the console with each host's noise floor, and checked
against a reference when one was named. This module reads cases (their units, identities and
store), never builds one: no torch, tabpfn or fitting; the results' readers (pandas) are imported
by the functions that read them.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrofit.errors import RunnerError
from retrofit.record_guard import RECORD_DIR
from retrofit.runner import print_run_summary
from retrofit.runner.store import UnitStore
from retrofit.unit_key import UnitKey

if TYPE_CHECKING:  # a case is read here (its units and identities), never built
    import pandas as pd

    from retrofit.results.record import UnitRecord
    from retrofit.results.reproduction import Reference
    from retrofit.runner.case import Case


def stored_rows(case: "Case") -> dict[UnitKey, dict[str, Any] | None]:
    """Per unit of `case`, its stored row if the store holds its identity (`Case.identities`, as
    the case computed them), else None."""
    store = UnitStore(case.runs_dir)
    return {key: store.finished(identity, key) for key, identity in case.identities.items()}


def reusable(cases: "Sequence[Case]") -> int:
    """How many units of `cases` the store already holds under their identity (none with `overwrite`)."""
    return sum(row is not None for case in cases if not case.overwrite for row in stored_rows(case).values())


FLOORS = RECORD_DIR / "noise_floor.csv"
"""Each shipped host's measured noise floor (`noise_floors`)."""


def noise_floors(*paths: Path, precision: str = "float32") -> dict[tuple[str, str], float]:
    """Each (host, device)'s noise floor for runs in `precision` (`retrofit.measure.floor_table.read_floors`)
    from `paths` (none given: `results/noise_floor.csv`, written by `make noise-floor`, and `OWN_FLOORS`, where
    `python -m retrofit noise_floor` writes a user's own); where two files hold a host and device,
    the first one's floor is taken (the record's over a user's); {} for a missing file (there: floor
    not measured)."""
    from retrofit.measure.floor_table import OWN_FLOORS, read_floors

    floors: dict[tuple[str, str], float] = {}
    for path in reversed(paths or (FLOORS, OWN_FLOORS)):
        floors |= read_floors(path, precision) if Path(path).is_file() else {}
    return floors


def frame_floors(frame: "pd.DataFrame", *paths: Path) -> dict[tuple[str, str], float]:
    """The noise floors `frame`'s rows are read against (`noise_floors` of `paths`): those measured in
    `auto` precision where every row ran in it, float32's otherwise."""
    return noise_floors(*paths, precision="auto" if set(frame["precision"]) == {"auto"} else "float32")


def floor_commands(
    frame: "pd.DataFrame", floors: Mapping[tuple[str, str], float], host_paths: Mapping[str, Path] | None = None
) -> dict[tuple[str, str], str]:
    """(host, device) -> the command that measures its floor on the datasets of `frame` it ran on
    (`retrofit.measure.floor_table.floor_command`), for each one of `frame` without a floor;
    `host_paths` (host -> checkpoint, the run's cases') names a host's file, a shipped host's being
    its own option."""
    from retrofit.hosts import available, get_path
    from retrofit.measure.floor_table import floor_command

    paths = dict(host_paths or {})
    commands = {}
    for (host, device), rows in frame.groupby(["host", "device"], sort=True):
        if (host, device) not in floors:
            datasets = sorted(rows["dataset"].unique())
            shipped = host in available() and Path(paths.get(host, get_path(host))) == get_path(host)
            commands[host, device] = floor_command(host, device, datasets, None if shipped else paths.get(host, ""))
    return commands


def case_records(case: "Case", rows: "Sequence[Mapping[str, Any]]") -> "list[UnitRecord]":
    """The records of `rows` (one per unit of `case`, in order, as `run_case` returns them),
    labelled as the case labels its units (a stored row is shared by every run of its unit)."""
    from retrofit.results.record import UnitRecord

    return [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in zip(case.units, rows, strict=True)]


def sweep_records(cases: "Sequence[Case]") -> "list[UnitRecord]":
    """The records of every unit of `cases` from the store, under the identities the cases
    computed when they were built (the sweep's own check before its first job: a unit computed
    from other data, host file, settings, code or libraries has another identity); RunnerError
    naming a unit without a stored result, so nothing partial is aggregated as if complete."""
    records, missing = [], []
    for case in cases:
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
    records: "Sequence[UnitRecord]",
    log_files: str,
    reused: str,
    *,
    keep: bool = False,
    reference: "Reference | None" = None,
    notices: Sequence[str] = (),
    host_paths: Mapping[str, Path] | None = None,
) -> "pd.DataFrame":
    """Write `records` into `results_dir` (`keep`: with the rows already there, as single runs
    accumulate), print the headline table, the files written, where the per-unit detail is
    (`log_files`) and how many units were reused (`reused`); with a `reference` (read before the
    run), check the run's own rows against it (`reproduction.txt`; RunnerError if they differ).
    `host_paths` (host -> checkpoint) completes the command that measures a missing noise floor."""
    from retrofit.results.record import frame_of
    from retrofit.results.reproduction import verify
    from retrofit.results.run_files import aggregate, headline, outputs

    frame = aggregate(results_dir, records, keep=keep, floors=frame_floors)
    written = [results_dir / name for name in outputs(frame)]
    floors = frame_floors(frame)
    commands = floor_commands(frame, floors, host_paths)
    print_run_summary(headline(frame, floors, commands), written, log_files, notices, reused)
    if reference is not None:
        verify(results_dir, reference, frame_of(records) if keep else None)
    return frame
