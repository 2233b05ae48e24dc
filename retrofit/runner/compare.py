"""Two results files unit by unit: the one comparison behind `make compare` and the reproduction check.

`compare(a, b, tolerances)` matches rows on the unit key (`record.KEY`). Every numeric result
column both files have is compared — not the timings (`TIMES`: they measure the machine and its
load) and not the columns that say what a row was computed from (`record.IDENTITY`) — and a
value agrees when `|A − B| <= atol + rel · |B|` (`Tolerances`: 1e-5 relative everywhere, and on
the matched deltas, differences of nearly equal levels, an absolute tolerance on their own scale;
NaN agrees with NaN only). For each column it gives the largest |A − B|, relative to |B|, and the
unit where it occurs; per host × variant the mean ΔRMSE % in A, in B and their difference.

A row of A recomputed from other inputs than B's (host file or data: `record.INPUTS`) is listed
as such, never as a failure: that is how an intended host change is recorded. Rows and numeric
columns in one file only are listed. `make compare` prints a `Comparison` (`Comparison.text`).

    make compare A=outputs/results/retrofit_rmse.csv B=results/retrofit_rmse.csv

`verify` checks a fresh `retrofit_rmse.csv` against a reference (`read_reference`: the working
tree's file or, with a commit, as committed there, read before the run writes). On one machine
the CPU path is deterministic (max rel |Δ| 0); across CPUs float32 kernels differ in the last
bits, which `TOLERANCES` absorb. It fails on a differing row, a numeric column in one file only
and an extra row; rows only in the reference are a subset said as such, unless every row is
required (`Reference.require_all`, a rewrite of the record), when they fail as missing. With
`grid_changed=true` new and dropped rows are listed instead of failed. The line names the
machines of both sides; `reproduction.txt` holds the largest difference per column.
"""

import io
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.runner.record import COLUMNS, IDENTITY, INPUTS, KEY, NUMERIC

TIMES = frozenset(
    {
        "predict_seconds",
        "baseline_predict_seconds",
        "predict_time_ratio",
        "predict_time_ratio_min",
        "predict_time_ratio_max",
        "fit_seconds",
    }
)
"""Timings: numeric, but of the machine and its load, not of the method; never compared."""


@dataclass(frozen=True)
class Tolerances:
    """When two values agree: `|A − B| <= atol + rel · |B|`, with `atol` from `delta_atol` for the
    matched deltas (% points for `delta_rmse_pct` and `delta_crps_pct`, nats for `delta_nll`, a
    fraction for `delta_coverage_90`) and `atol` elsewhere. Across CPUs float32 kernels round in the
    last bits (measured: levels within 6e-7 relative, deltas within 4e-5 points), far inside these."""

    rel: float = 1e-5
    atol: float = 1e-12
    delta_atol: Mapping[str, float] = field(
        default_factory=lambda: {
            "delta_rmse_pct": 1e-3,
            "delta_crps_pct": 1e-3,
            "delta_nll": 1e-4,
            "delta_coverage_90": 1e-4,
        }
    )

    def of(self, column: str) -> float:
        """The absolute tolerance of `column`."""
        return self.delta_atol.get(column, self.atol)


TOLERANCES = Tolerances()


@dataclass(frozen=True)
class Comparison:
    """`columns`: per compared column, the largest |A − B|, relative to |B|, where, and whether
    every row agrees; `differing`: rows (not recomputed from changed inputs) with a column out of
    tolerance, each with those columns; `changed_inputs`: rows of A computed from other inputs
    than B's; `only_a` / `only_b`: unit labels in one file only; `one_sided`: numeric columns in
    one file only; `variants`: mean ΔRMSE % per host × variant in A and B; `matched`: rows in both;
    `max_rel` / `max_column`: the largest relative difference and its column."""

    matched: int
    columns: pd.DataFrame
    differing: tuple[str, ...]
    changed_inputs: tuple[str, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    one_sided: tuple[str, ...]
    variants: pd.DataFrame
    max_rel: float
    max_column: str

    def largest(self) -> str:
        """The largest difference per compared column as Markdown."""
        shown = self.columns.assign(
            **{col: self.columns[col].map(lambda v: f"{v:.3g}") for col in ("max |A − B|", "relative")}
        )
        return shown.to_markdown(index=False, disable_numparse=True)

    def text(self) -> str:
        """The comparison as Markdown, for the console (`make compare`)."""
        lines = [f"{self.matched} units in both files; {len(self.only_a)} only in A, {len(self.only_b)} only in B"]
        for label, keys in (
            ("only in A", self.only_a),
            ("only in B", self.only_b),
            ("recomputed from changed inputs (host or data)", self.changed_inputs),
            ("differing beyond the tolerances", self.differing),
            ("numeric columns in one file only", self.one_sided),
        ):
            if keys:
                lines.append(f"{label}: {listed(keys)}")
        lines += ["", "## Largest difference per column (timings not compared)", "", self.largest()]
        lines += ["", "## Mean ΔRMSE % per host × variant", "", self.variants.to_markdown(index=False, floatfmt="+.4f")]
        return "\n".join(lines)


def listed(keys: tuple[str, ...] | list[str], shown: int = 5) -> str:
    """The first `shown` of `keys` and how many more."""
    return ", ".join(keys[:shown]) + (f" ... ({len(keys)} in all)" if len(keys) > shown else "")


def label(key: tuple) -> str:
    """A unit key as `host=h/dataset=d/seed=0/variant=v[/hparams=...]`."""
    return "/".join(f"{name}={value}" for name, value in zip(KEY, key, strict=True) if value != "")


def keyed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """`frame` indexed by `KEY`; RunnerError naming `name` when a key column is absent, a seed is not
    an integer, a key occurs twice or a number column holds text."""
    absent = [column for column in KEY if column not in frame.columns]
    if absent:
        raise RunnerError(f"{name} lacks the columns {absent}; pass a retrofit_rmse.csv")
    seeds = pd.to_numeric(frame["seed"], errors="coerce")
    if seeds.isna().any() or (seeds % 1 != 0).any():
        raise RunnerError(f"{name} has a seed that is not an integer; pass a retrofit_rmse.csv")
    texts = [
        c
        for c in frame.columns
        if c in NUMERIC and not (pd.api.types.is_numeric_dtype(frame[c]) or frame[c].isna().all())
    ]
    if texts:
        raise RunnerError(f"{name}: column {texts[0]!r} holds text where numbers belong; pass a retrofit_rmse.csv")
    hparams = frame["hparams"].map(lambda h: "" if pd.isna(h) else str(h))
    frame = frame.assign(hparams=hparams, seed=seeds.astype(int)).set_index(KEY)
    repeated = frame.index[frame.index.duplicated()]
    if len(repeated):
        raise RunnerError(f"{name} lists {len(repeated)} units twice, e.g. {label(repeated[0])}")
    return frame


def read_results(path: Path | str, name: str) -> pd.DataFrame:
    """The results CSV at `path`; RunnerError naming `name` and the file when it is missing, not a
    file, empty, not UTF-8 text or not a CSV."""
    path = Path(path)
    if not path.is_file():
        why = "does not exist" if not path.exists() else "is not a file"
        raise RunnerError(f"{name} {path} {why}; pass a retrofit_rmse.csv")
    return _read_csv(path, f"{name} {path}")


def _read_csv(source: Any, what: str) -> pd.DataFrame:
    """`pd.read_csv(source)`; RunnerError naming `what` when it is not a readable CSV."""
    try:
        return pd.read_csv(source, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise RunnerError(f"{what} is not a readable CSV ({str(err).splitlines()[0][:200]})") from None


def _compared(frame: pd.DataFrame) -> set[str]:
    """The result columns of `frame` to compare: numeric ones of the record (`NUMERIC`) and any
    numeric column it does not know; never its text columns (an all-blank `arm` reads as numbers),
    the timings or the identity columns."""
    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    return {c for c in numeric if c in NUMERIC or c not in COLUMNS} - TIMES - set(IDENTITY)


def _changed_inputs(a: pd.DataFrame, b: pd.DataFrame, both: pd.Index) -> pd.Series:
    """Per matched row, whether its inputs (`INPUTS`, known in both files) differ."""
    changed = pd.Series(False, index=both)
    for column in INPUTS:
        if column in a and column in b:
            left, right = (f.loc[both, column].map(lambda v: "" if pd.isna(v) else str(v)) for f in (a, b))
            changed |= (left != "") & (right != "") & (left != right)
    return changed


def compare(
    a: pd.DataFrame | Path | str,
    b: pd.DataFrame | Path | str,
    tolerances: Tolerances = TOLERANCES,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Compare results `a` with `b` (frames or paths of `retrofit_rmse.csv` files; `names` label them
    in errors) under `tolerances` (see the module docstring)."""
    a_, b_ = (
        keyed(read_results(f, n) if isinstance(f, str | Path) else f, n) for f, n in zip((a, b), names, strict=True)
    )
    a_numeric, b_numeric = _compared(a_), _compared(b_)
    columns = sorted(a_numeric & b_numeric)
    one_sided = [f"{c} ({names[0]} only)" for c in sorted(a_numeric - b_numeric)]
    one_sided += [f"{c} ({names[1]} only)" for c in sorted(b_numeric - a_numeric)]
    both = a_.index.intersection(b_.index)
    left = a_.loc[both, columns].to_numpy(dtype="float64")
    right = b_.loc[both, columns].to_numpy(dtype="float64")
    both_nan = np.isnan(left) & np.isnan(right)
    diff = np.where(both_nan, 0.0, np.abs(left - right))
    diff = np.where(np.isnan(diff), np.inf, diff)  # a value in one file only
    atol = np.array([tolerances.of(c) for c in columns])
    agree = diff <= atol + tolerances.rel * np.abs(np.nan_to_num(right))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(right))
    rel = np.where(np.isnan(rel), np.inf, rel)
    changed = _changed_inputs(a_, b_, both).to_numpy()
    rows = []
    for j, column in enumerate(columns):
        i = int(np.argmax(diff[:, j])) if len(both) else None
        rows.append(
            {
                "column": column,
                "max |A − B|": float(diff[i, j]) if i is not None else np.nan,
                "relative": float(rel[i, j]) if i is not None else np.nan,
                "where": label(both[i]) if i is not None else "(no unit in both)",
                "within tolerance": bool(agree[~changed, j].all()),
            }
        )
    worst = np.unravel_index(np.argmax(rel[~changed]), rel[~changed].shape) if rel[~changed].size else None
    differing = [
        f"{label(key)} ({', '.join(c for c, ok in zip(columns, row, strict=True) if not ok)})"
        for key, row, moved in zip(both, agree, changed, strict=True)
        if not moved and not row.all()
    ]
    matched = a_.loc[both].reset_index()
    variants = (
        matched.assign(B=b_.loc[both, "delta_rmse_pct"].to_numpy())
        .rename(columns={"delta_rmse_pct": "A"})
        .groupby(["host", "variant", "hparams"], sort=True)
        .agg(units=("A", "size"), A=("A", "mean"), B=("B", "mean"))
        .reset_index()
        if "delta_rmse_pct" in a_ and "delta_rmse_pct" in b_
        else pd.DataFrame(columns=["host", "variant", "hparams", "units", "A", "B"])
    )
    variants["A − B"] = variants["A"] - variants["B"]
    return Comparison(
        matched=len(both),
        columns=pd.DataFrame(rows, columns=["column", "max |A − B|", "relative", "where", "within tolerance"]),
        differing=tuple(differing),
        changed_inputs=tuple(label(k) for k, moved in zip(both, changed, strict=True) if moved),
        only_a=tuple(label(k) for k in a_.index.difference(b_.index)),
        only_b=tuple(label(k) for k in b_.index.difference(a_.index)),
        one_sided=tuple(one_sided),
        variants=variants,
        max_rel=float(rel[~changed][worst]) if worst is not None else float("nan"),
        max_column=columns[worst[1]] if worst is not None else "",
    )


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
            return _checked(
                _read_csv(io.StringIO(shown.stdout), f"reference {path}"), source, require_all, grid_changed
            )
        if shown is not None and "not a git repository" not in shown.stderr:
            reason = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else "git show failed"
            raise RunnerError(
                f"reference {path} at {commit}: {reason}; commit it, or pass reference_commit=null to read the "
                "working tree"
            )
    if not path.is_file():
        raise RunnerError(f"reference {path} does not exist; pass reference=<a retrofit_rmse.csv to compare with>")
    where = "working tree" if commit is None else f"working tree: not a git checkout, no {commit}"
    return _checked(_read_csv(path, f"reference {path}"), f"{path} ({where})", require_all, grid_changed)


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
