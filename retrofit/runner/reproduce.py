"""Does a fresh `retrofit_rmse.csv` reproduce a reference (e.g. the committed one, read before the run)?

Rows are matched on `KEY`. Every numeric column of the two files except the timings
(`NOT_COMPARED`: they measure the machine, not the method) is compared — rmse, nll, crps,
coverage, their baselines and deltas, the counts and settings — and a value reproduces when
`|new - ref| <= atol + RTOL * |ref|` (NaN matches NaN only), atol `DELTA_ATOL` on the matched
deltas (`delta_*`) and `ATOL` elsewhere. On one machine the CPU path is deterministic (same code,
versions, host file, settings and thread count give the same bits: max rel |Δ| 0); across CPUs
float32 kernels round differently in the last bits (measured between an AMD EPYC machine and the
reference: rmse, nll, crps within 6e-7 relative, deltas within 4e-5 points, coverage equal), which
the tolerances absorb with margin while any change of the method's numbers stands out.
A row reproduces when every compared column does. A
numeric column in one file only fails the check, by name. A row only in the new file (extra)
fails; rows only in the reference are a subset the sweep did not run: compared as such and said
so, unless the reference requires every row (`Reference.require_all`, as `make retrofit`'s
`record=true` does), when they fail as missing. A grid changed on purpose (`grid_changed=true`,
`Reference.grid_changed`: hosts, datasets, seeds, variants or arms added or dropped) compares the
rows both files hold, which must reproduce, and lists the new and the dropped rows instead of
failing on them; it is refused before the sweep runs when the sweep's rows are the reference's.

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

import numpy as np
import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic

KEY = ["host", "dataset", "seed", "variant", "hparams"]
RTOL = 1e-5
"""Relative tolerance on every compared value (cross-CPU float32 rounding is below 1e-6)."""
ATOL = 1e-12
"""Absolute tolerance of the levels and counts (for values that are zero)."""
DELTA_ATOL = 1e-4
"""Absolute tolerance of the matched deltas (`delta_*`: % points, nats, coverage fraction), which are
differences of nearly equal levels, so their relative rounding is large."""
NOT_COMPARED = frozenset(
    {
        "predict_seconds",
        "baseline_predict_seconds",
        "predict_time_ratio",
        "predict_time_ratio_min",
        "predict_time_ratio_max",
        "fit_seconds",
    }
)
"""Timings: numeric, but of the machine and its load, not of the method."""


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
    """The outcome of `compare`: rows within tolerance out of the rows in both files, the columns
    compared, the largest relative difference (and its column), and the labels of rows that
    differ (with their columns), are only in the reference or only in the new file, and of
    numeric columns in one file only."""

    within: int
    compared: int
    reference_rows: int
    columns: tuple[str, ...]
    max_rel: float
    max_column: str
    differing: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    one_sided: tuple[str, ...]
    source: str
    require_all: bool = False
    grid_changed: bool = False

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
        """`reproduced: <k>/<n> rows within 1e-09 (max rel |Δ| <x> [in <column>], <m> columns) vs
        <source>`, then the subset, and what failed."""
        where = f" in {self.max_column}" if self.max_rel > 0 else ""
        text = (
            f"reproduced: {self.within}/{self.compared} rows within {RTOL:g} "
            f"(max rel |Δ| {self.max_rel:.3g}{where}, {len(self.columns)} columns) vs {self.source}"
        )
        if self.grid_changed:
            changes = [_listed(label, keys) for label, keys in (("new", self.extra), ("dropped", self.missing)) if keys]
            text += f"; grid changed: {'; '.join(changes)}"
        elif self.missing and not self.require_all:
            text += f"; subset: {self.compared} of the reference's {self.reference_rows} rows ran"
        for label, keys in self.failures.items():
            if keys:
                text += f"; {_listed(label, keys)}"
        return text


def _listed(label: str, keys: Sequence[str]) -> str:
    """`<n> <label>: <the first five keys> ...`."""
    return f"{len(keys)} {label}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"


def _keyed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """`frame` indexed by `KEY`; RunnerError naming `name` when a key column is absent, a seed is
    not an integer or a key occurs twice."""
    absent = [column for column in KEY if column not in frame.columns]
    if absent:
        raise RunnerError(f"the {name} table has no {', '.join(absent)} column; is it a retrofit_rmse.csv?")
    seeds = pd.to_numeric(frame["seed"], errors="coerce")
    if seeds.isna().any() or (seeds % 1 != 0).any():
        raise RunnerError(f"the {name} table has a seed that is not an integer; is it a retrofit_rmse.csv?")
    hparams = frame["hparams"].map(lambda h: "" if pd.isna(h) else str(h))
    keyed = frame.assign(hparams=hparams, seed=seeds.astype(int)).set_index(KEY)
    repeated = keyed.index[keyed.index.duplicated()]
    if len(repeated):
        raise RunnerError(f"the {name} table has {len(repeated)} repeated rows, e.g. {_label(repeated[0])}")
    return keyed


def _label(key: tuple) -> str:
    return "/".join(f"{name}={value}" for name, value in zip(KEY, key, strict=True) if value != "")


def _numeric(frame: pd.DataFrame) -> set[str]:
    return {column for column in frame.columns if pd.api.types.is_numeric_dtype(frame[column])} - NOT_COMPARED


def compare(new: pd.DataFrame, reference: Reference | pd.DataFrame) -> Reproduction:
    """`new` (rows of `retrofit_rmse.csv`) against `reference` (a bare frame: read from memory),
    row by row on `KEY`, on every numeric column of both but the timings."""
    if not isinstance(reference, Reference):
        reference = Reference(reference, "a table in memory")
    new, ref = _keyed(new, "new"), _keyed(reference.frame, "reference")
    new_numeric, ref_numeric = _numeric(new), _numeric(ref)
    columns = sorted(new_numeric & ref_numeric)
    one_sided = [f"{c} (new only)" for c in sorted(new_numeric - ref_numeric)]
    one_sided += [f"{c} (reference only)" for c in sorted(ref_numeric - new_numeric)]
    both = new.index.intersection(ref.index)
    a = new.loc[both, columns].to_numpy(dtype="float64")
    b = ref.loc[both, columns].to_numpy(dtype="float64")
    diff = np.abs(a - b)
    atol = np.array([DELTA_ATOL if c.startswith("delta_") else ATOL for c in columns])
    same = (diff <= atol + RTOL * np.abs(b)) | (np.isnan(a) & np.isnan(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
    rel = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(diff), np.inf, rel))
    worst = np.unravel_index(np.argmax(rel), rel.shape) if rel.size else None
    rows_ok = same.all(axis=1)
    differing = [
        f"{_label(key)} ({', '.join(c for c, ok in zip(columns, row, strict=True) if not ok)})"
        for key, row, fine in zip(both, same, rows_ok, strict=True)
        if not fine
    ]
    return Reproduction(
        within=int(rows_ok.sum()),
        compared=len(both),
        reference_rows=len(ref.index),
        columns=tuple(columns),
        max_rel=float(rel[worst]) if worst is not None else float("nan"),
        max_column=columns[worst[1]] if worst is not None else "",
        differing=tuple(differing),
        missing=tuple(_label(k) for k in ref.index.difference(new.index)),
        extra=tuple(_label(k) for k in new.index.difference(ref.index)),
        one_sided=tuple(one_sided),
        source=reference.source,
        require_all=reference.require_all,
        grid_changed=reference.grid_changed,
    )


def require_covered(reference: Reference | None, keys: Iterable[Sequence[Any]]) -> None:
    """Before a sweep runs: when `reference` requires every row (`record=true`), RunnerError unless
    the sweep's unit `keys` (`UnitKey`s: host, dataset, seed, variant, hparams pairs) cover them all,
    so that a partial grid never rewrites the record. With `grid_changed`, RunnerError when the
    sweep's rows are exactly the reference's (the key would change nothing)."""
    if reference is None or not (reference.require_all or reference.grid_changed):
        return
    ran = {(k.host, k.dataset, k.seed, k.variant, ",".join(f"{n}={v}" for n, v in k.hparams)) for k in keys}
    rows = _keyed(reference.frame, "reference").index
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
            f"record=true: this sweep would not rerun {len(absent)} of the {len(reference.frame)} rows of "
            f"{reference.source}, e.g. {_label(absent[0])}; the record is rewritten only by the whole grid "
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
    _keyed(frame, f"reference {source}")
    return Reference(frame, source, require_all, grid_changed)


def verify(results_dir: Path, reference: Reference | pd.DataFrame) -> Reproduction:
    """Compare `<results_dir>/retrofit_rmse.csv` with `reference` (see `read_reference`), print the
    line and write it to `<results_dir>/reproduction.txt`. RunnerError (a non-zero exit in an entry
    point) unless it reproduced (`Reproduction.ok`)."""
    outcome = compare(pd.read_csv(Path(results_dir) / "retrofit_rmse.csv"), reference)
    write_text_atomic(Path(results_dir) / "reproduction.txt", outcome.line() + "\n")
    print(outcome.line())
    if not outcome.ok:
        raise RunnerError(f"not reproduced ({outcome.line()}); if the change is intended, commit the new CSV")
    return outcome
