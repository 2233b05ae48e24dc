"""A unit's identity and the unit store: one file per unit, named by what its numbers come from;
and a run's units read back from it, written as results and shown.

A unit is one variant (with its hyper-parameter overrides) of one case (host × dataset × seed); it
is named for people by its `retrofit.unit_key.UnitKey` (the key columns of `retrofit_rmse.csv`)
and identified by a digest of everything its numbers are computed from
(`retrofit.runner.case.Case.identities`: the data's and the host file's bytes, every setting that
changes a number, the resolved variant, a timed unit's timing settings, the library versions and
the code's meaning: `environment()`). Its file is `<runs_dir>/<identity>.json`; a unit is finished
when a valid file of its identity exists, and nothing else decides it. The file holds the row, its
`identity` and a `row_digest` of the row; a damaged one (unparsable, not an object, lacking a
column, not matching its digest) is never served. Writes are atomic (`retrofit.io`): concurrent
and interrupted runs leave whole files or none.

A run's end (`finish`): the records of its cases' units, read by the identities its cases computed
(`sweep_records`: exactly those files, whatever else the store holds; a unit without one is named
and nothing is written) and labelled as its cases label them, written as results
(`retrofit.results.run_files`), shown on the console with each host's noise floor, and checked
against a reference when one was named. This module reads cases, never builds one: no torch,
tabpfn or fitting.
"""

import ast
import functools
import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.metrics import matched_deltas
from retrofit.record_guard import RECORD_DIR
from retrofit.results.record import COLUMNS, NUMERIC
from retrofit.runner import report
from retrofit.unit_key import UnitKey, key_of

if TYPE_CHECKING:  # a case is read here (its units and identities), never built
    import pandas as pd

    from retrofit.results.record import UnitRecord
    from retrofit.results.reproduction import Reference
    from retrofit.runner.case import Case

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""The variant that patches nothing; its prediction is every unit's reference."""


def reject_duplicates(keys: Iterable[UnitKey]) -> None:
    """Raise RunnerError listing every key that occurs more than once (before anything runs)."""
    seen: set[UnitKey] = set()
    duplicates = sorted({k for k in keys if k in seen or seen.add(k)})
    if duplicates:
        listed = ", ".join(k.label() for k in duplicates)
        raise RunnerError(f"duplicate units in this sweep: {listed}; remove the repeated override values")


def digest(parts: Mapping[str, Any]) -> str:
    """A short digest of what a result depends on (JSON-serialisable `parts`)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


PACKAGE = Path(__file__).resolve().parents[1]
"""The `retrofit` package directory, whose source `code_digest` covers."""
NOT_NUMBERS = (
    *("jobs/", "runtimes.py", "record_guard.py", "pretrain/", "removal/", "audit/", "results/"),
    "runner/__init__.py",
)
"""The parts of the package (paths relative to it) that compute no unit's numbers: the other jobs,
the results' reading, aggregating and showing, and the runner's schemas and console."""


def _meaning(source: str) -> str:
    """`ast.dump` of a module's source without its docstrings (module, class and function): what the
    code does, not what it says; comments never reach the tree."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


@functools.cache
def code_digest(root: Path = PACKAGE) -> str:
    """sha256 over the meaning (`_meaning`) of every `*.py` file under `root` that computes numbers
    (all but `NOT_NUMBERS`), with its relative path: a change to what that code does makes every
    stored unit stale; an edit of a comment or docstring, or of how results are shown, does not."""
    hashed = hashlib.sha256()
    paths = [path for path in root.rglob("*.py") if not path.relative_to(root).as_posix().startswith(NOT_NUMBERS)]
    for path in sorted(paths):
        hashed.update(str(path.relative_to(root)).encode() + b"\0" + _meaning(path.read_text()).encode() + b"\0")
    return hashed.hexdigest()[:16]


LIBRARIES = ("tabpfn", "torch", "numpy", "scikit-learn")
"""The libraries whose installed versions are part of every unit's identity."""


def environment() -> dict[str, str]:
    """The library versions (`LIBRARIES`, read without importing them) and the code digest."""
    return {name: version(name) for name in LIBRARIES} | {"code": code_digest()}


def file_digest(path: Path) -> str:
    """sha256 of a file's content (a host checkpoint, a CSV), first 16 hex digits."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()[:16]


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


# --- a run's units read back -------------------------------------------------------------------


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

    frame = aggregate(results_dir, records, keep=keep)
    written = [results_dir / name for name in outputs(frame)]
    floors = noise_floors(precision="auto" if set(frame["precision"]) == {"auto"} else "float32")
    commands = floor_commands(frame, floors, host_paths)
    report(headline(frame, floors, commands), written, log_files, notices, reused)
    if reference is not None:
        verify(results_dir, reference, frame_of(records) if keep else None)
    return frame
