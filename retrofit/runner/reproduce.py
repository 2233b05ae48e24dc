"""Does a fresh `retrofit_rmse.csv` reproduce a reference (e.g. the committed one, read before the run)?

The rows are compared by `retrofit.runner.compare.compare` (the comparison `make compare` prints):
every numeric result column of both files but the timings, each value within `TOLERANCES` (1e-5
relative; the matched deltas with an absolute tolerance on their own scale). On one machine the
CPU path is deterministic (same code, versions, host file, settings and thread count give the same
bits: max rel |Δ| 0); across CPUs float32 kernels round differently in the last bits, which the
tolerances absorb with margin while any change of the method's numbers stands out. The line names
the machines that computed the reference's rows and the new ones (each row records its `machine`:
CPU model, BLAS kernel, torch's SIMD level), and `reproduction.txt` holds the largest difference
per column.

A row reproduces when every compared column does. A row recomputed from changed inputs (another
host file or data than the reference's row) is listed as such, not failed: that is how an intended
host change is recorded. A numeric column in one file only fails the check, by name. A row only in
the new file (extra) fails; rows only in the reference are a subset the sweep did not run: compared
as such and said so, unless the reference requires every row (`Reference.require_all`, as a rewrite
of the committed record does), when they fail as missing. A grid changed on purpose
(`grid_changed=true`, `Reference.grid_changed`: hosts, datasets, seeds, variants or arms added or
dropped) compares the rows both files hold, which must reproduce, and lists the new and the dropped
rows instead of failing on them; it is refused before the sweep runs when the sweep's rows are the
reference's.

`read_reference` reads the file the user names, from the working tree or, with a commit, as
committed there (`make retrofit` reads `HEAD` before the sweep runs, so a failed run, which has
overwritten the file, cannot make the next run compare with itself); the outcome line says which.
"""

import io
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.runner.compare import TOLERANCES, Comparison, compare, keyed, label, read_results


@dataclass(frozen=True)
class Reference:
    """A reference table, where it was read (`source`, e.g. `<path> (working tree)` or
    `<path> at HEAD (3bab85c)`), and whether a comparison must cover all its rows."""

    frame: pd.DataFrame
    source: str
    require_all: bool = False
    grid_changed: bool = False


@dataclass(frozen=True)
class Reproduction:
    """The outcome of `check`: the `comparison` of the new rows with the reference's, where the
    reference was read (`source`), its row count, the rows only in it (`missing`) or only in the
    new file (`extra`), the machines that computed each side, and what the reference requires."""

    comparison: Comparison
    source: str
    reference_rows: int
    machines: tuple[str, str]
    require_all: bool = False
    grid_changed: bool = False

    @property
    def missing(self) -> tuple[str, ...]:
        return self.comparison.only_b

    @property
    def extra(self) -> tuple[str, ...]:
        return self.comparison.only_a

    @property
    def differing(self) -> tuple[str, ...]:
        return self.comparison.differing

    @property
    def one_sided(self) -> tuple[str, ...]:
        return self.comparison.one_sided

    @property
    def compared(self) -> int:
        return self.comparison.matched

    @property
    def within(self) -> int:
        return self.compared - len(self.comparison.differing) - len(self.comparison.changed_inputs)

    @property
    def failures(self) -> dict[str, tuple[str, ...]]:
        """What fails the check, by label: differing rows and one-sided columns always; extra rows,
        and missing ones when every row is required, unless the grid changed on purpose."""
        failed = {"differing": self.differing}
        if not self.grid_changed:
            failed["extra"] = self.extra
        failed["columns in one file only"] = self.one_sided
        if self.require_all and not self.grid_changed:
            failed["missing"] = self.missing
        return failed

    @property
    def ok(self) -> bool:
        return not any(self.failures.values())

    def line(self) -> str:
        """`reproduced: <k>/<n> rows within 1e-05 (max rel |Δ| <x> [in <column>], <m> columns) vs
        <source>`, then the rows recomputed from changed inputs, the subset, what failed, and the
        machines of both sides."""
        comparison = self.comparison
        where = f" in {comparison.max_column}" if comparison.max_rel > 0 else ""
        text = (
            f"reproduced: {self.within}/{self.compared} rows within {TOLERANCES.rel:g} "
            f"(max rel |Δ| {comparison.max_rel:.3g}{where}, {len(comparison.columns)} columns) vs {self.source}"
        )
        if comparison.changed_inputs:
            text += f"; {_listed('recomputed from changed inputs', comparison.changed_inputs)}"
        if self.grid_changed:
            changes = [_listed(kind, keys) for kind, keys in (("new", self.extra), ("dropped", self.missing)) if keys]
            text += f"; grid changed: {'; '.join(changes)}"
        elif self.missing and not self.require_all:
            text += f"; subset: {self.compared} of the reference's {self.reference_rows} rows ran"
        for kind, keys in self.failures.items():
            if keys:
                text += f"; {_listed(kind, keys)}"
        return text + f"; reference computed on {self.machines[1]}; this run on {self.machines[0]}"

    def report(self) -> str:
        """`line()` and the largest difference per column (what `reproduction.txt` holds)."""
        return f"{self.line()}\n\n## Largest difference per column\n\n{self.comparison.largest()}\n"


def _listed(label: str, keys: Sequence[str]) -> str:
    """`<n> <label>: <the first five keys> ...`."""
    return f"{len(keys)} {label}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"


def machines_of(frame: pd.DataFrame) -> str:
    """The machines (`machine` column) that computed the rows of `frame`, or "a machine not recorded"."""
    named = sorted({m for m in frame.get("machine", pd.Series(dtype=str)).dropna().astype(str) if m})
    return " + ".join(named) if named else "a machine not recorded"


def check(new: pd.DataFrame, reference: Reference | pd.DataFrame) -> Reproduction:
    """`new` (rows of `retrofit_rmse.csv`) against `reference` (a bare frame: read from memory),
    by `retrofit.runner.compare.compare` (see the module docstring)."""
    if not isinstance(reference, Reference):
        reference = Reference(reference, "a table in memory")
    comparison = compare(new, reference.frame, names=("new", "reference"))
    return Reproduction(
        comparison=comparison,
        source=reference.source,
        reference_rows=len(reference.frame),
        machines=(machines_of(new), machines_of(reference.frame)),
        require_all=reference.require_all,
        grid_changed=reference.grid_changed,
    )


def require_covered(reference: Reference | None, keys: Iterable[Sequence[Any]]) -> None:
    """Before a sweep runs: when `reference` requires every row (a record run), RunnerError unless
    the sweep's unit `keys` (`UnitKey`s: host, dataset, seed, variant, hparams pairs) cover them all,
    so that a partial grid never rewrites the record. With `grid_changed`, RunnerError when the
    sweep's rows are exactly the reference's (the key would change nothing)."""
    if reference is None or not (reference.require_all or reference.grid_changed):
        return
    ran = {(k.host, k.dataset, k.seed, k.variant, ",".join(f"{n}={v}" for n, v in k.hparams)) for k in keys}
    rows = keyed(reference.frame, "reference").index
    if reference.grid_changed:
        if ran == set(rows):
            raise RunnerError(
                f"grid_changed=true, but this sweep runs exactly the {len(rows)} rows of {reference.source}; "
                "drop grid_changed (make retrofit without GRID_CHANGED=1)"
            )
        return
    absent = [key for key in rows if key not in ran]
    if absent:
        raise RunnerError(
            f"this sweep would not rerun {len(absent)} of the {len(reference.frame)} rows of "
            f"{reference.source}, e.g. {label(absent[0])}; the record is rewritten only by the whole grid "
            "(make retrofit; when the grid itself changed on purpose, make retrofit GRID_CHANGED=1)"
        )


def _git(path: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True, text=True, check=False)
    except OSError:  # no git on this machine
        return None


def read_reference(
    path: Path, commit: str | None = None, *, require_all: bool = False, grid_changed: bool = False
) -> Reference:
    """The CSV at `path`: as it is in the working tree (`commit` None), or as committed at `commit`
    (e.g. `HEAD`) in the git checkout holding it — outside any git checkout, the file as it is,
    and the source says so; `require_all` and `grid_changed` as in `Reference`. RunnerError when
    the file (or its committed version) does not exist."""
    path = Path(path).resolve()
    if commit is not None:
        shown = _git(path, "show", f"{commit}:./{path.name}")
        if shown is not None and shown.returncode == 0:
            rev = _git(path, "rev-parse", "--short", commit).stdout.strip()
            source = f"{path} at {commit} ({rev})"
            return _checked(_csv(io.StringIO(shown.stdout), path), source, require_all, grid_changed)
        if shown is not None and "not a git repository" not in shown.stderr:
            reason = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else "git show failed"
            raise RunnerError(
                f"reference {path} at {commit}: {reason}; commit it, or pass reference_commit=null to read the "
                "working tree"
            )
    if not path.is_file():
        raise RunnerError(f"reference {path} does not exist; pass reference=<a retrofit_rmse.csv to compare with>")
    where = "working tree" if commit is None else f"working tree: not a git checkout, no {commit}"
    return _checked(_csv(path, path), f"{path} ({where})", require_all, grid_changed)


def _csv(source, path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(source)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise RunnerError(f"reference {path} is not a readable CSV ({str(err).splitlines()[0][:200]})") from None


def _checked(frame: pd.DataFrame, source: str, require_all: bool, grid_changed: bool) -> Reference:
    """The `Reference`, its keys checked now (before any sweep runs) rather than after it."""
    keyed(frame, f"reference {source}")
    return Reference(frame, source, require_all, grid_changed)


def verify(results_dir: Path, reference: Reference | pd.DataFrame, new: pd.DataFrame | None = None) -> Reproduction:
    """Compare `new` (default: `<results_dir>/retrofit_rmse.csv`; a single run passes its own rows)
    with `reference` (see `read_reference`), print the line and write it to
    `<results_dir>/reproduction.txt`. RunnerError (a non-zero exit in an entry point) unless it
    reproduced (`Reproduction.ok`)."""
    new = read_results(Path(results_dir) / "retrofit_rmse.csv", "the new table") if new is None else new
    outcome = check(new, reference)
    write_text_atomic(Path(results_dir) / "reproduction.txt", outcome.report())
    print(outcome.line())
    if not outcome.ok:
        raise RunnerError(f"not reproduced ({outcome.line()}); if the change is intended, commit the new CSV")
    return outcome
