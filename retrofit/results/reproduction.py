"""Two results files unit by unit: the one comparison behind `make compare` and the reproduction check.

`compare(a, b, tolerances)` matches rows on the unit key (`record.KEY`) and compares every numeric
result column both files have — not the timings (`TIMES`: they measure the machine and its load)
nor the columns that say what a row was computed from (`record.IDENTITY`). A value agrees when
`|A − B| <= atol + rel · |B|` (`Tolerances`; NaN agrees with NaN only). Per column it gives the
largest |A − B|, relative to |B|, and its unit; per host × variant the mean ΔRMSE % in A and B.
Equal values differ by 0; where B is 0 and A is not there is no relative difference, and that
|A − B| is said on its own, as is a value in one file only (`retrofit.results.differences`). A row
of A recomputed from other inputs than B's (host file or data: `record.INPUTS`) is listed as such,
never as a failure: that is how an intended host change is recorded (`make compare A= B=`).

The reproduction check (`verify`) is that comparison of a fresh `retrofit_rmse.csv` (A) with a
`Reference` (B: `read_reference`, the working tree's file or, with a commit, as committed there,
read before the run writes). It fails on a differing row, a numeric column in one file only and an
extra row; rows only in the reference are a subset said as such unless every row is required
(`Reference.require_all`, a rewrite of the record). With `grid_changed=true`, new and dropped rows
are listed instead. The line names the machines of both sides; `reproduction.txt` holds the
largest difference per column. On one machine the CPU path is deterministic (max rel |Δ| 0);
across CPUs float32 kernels differ in the last bits, which `Tolerances` absorb.
"""

import io
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_text_atomic
from retrofit.results.differences import Extremes, differences, extremes, relative_cell
from retrofit.results.record import COLUMNS, IDENTITY, INPUTS, NUMERIC
from retrofit.unit_key import KEY, label

TIMES = frozenset(
    {"predict_seconds", "baseline_predict_seconds", "fit_seconds"}
    | {"predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max"}
)
"""Timings: numeric, but of the machine and its load, not of the method; never compared."""


@dataclass(frozen=True)
class Tolerances:
    """When two values agree: `|A − B| <= atol + rel · |B|`, with `atol` from `delta_atol` for the
    matched deltas (% points, nats, a fraction for coverage) and `atol` elsewhere. Across CPUs
    float32 kernels round in the last bits, far inside these (`make compare A=<csv> B=<csv>` shows
    the largest difference per column)."""

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


TOLERANCES = Tolerances()


@dataclass(frozen=True)
class Reference:
    """A reference table, where it was read (`source`, e.g. `<path> at HEAD (3bab85c)`), whether a
    check must cover all its rows (`require_all`) and whether the grid changed on purpose."""

    frame: pd.DataFrame
    source: str = "a table in memory"
    require_all: bool = False
    grid_changed: bool = False


@dataclass(frozen=True)
class Comparison:
    """`columns`: per compared column, the largest |A − B|, relative to |B|, where, and whether every
    row agrees; `differing`: rows (not from changed inputs) out of tolerance, with those columns;
    `changed_inputs`: rows of A computed from other inputs than B's; `only_a` / `only_b`: units in
    one file only; `one_sided`: numeric columns in one file only; `variants`: mean ΔRMSE % per host ×
    variant; `matched`: rows in both; `extremes`: the largest differences, rows from changed inputs
    left out. As a reproduction check (`check`), B is the `reference` and `machines` are (A's, B's)."""

    matched: int
    columns: pd.DataFrame
    differing: tuple[str, ...]
    changed_inputs: tuple[str, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    one_sided: tuple[str, ...]
    variants: pd.DataFrame
    extremes: Extremes
    reference: Reference | None = None
    machines: tuple[str, str] = ("", "")

    missing = property(lambda self: self.only_b)
    extra = property(lambda self: self.only_a)
    compared = property(lambda self: self.matched)
    within = property(lambda self: self.matched - len(self.differing) - len(self.changed_inputs))

    def largest(self) -> str:
        """The largest difference per compared column as Markdown."""
        largest, relative = self.columns["max |A − B|"], self.columns["relative"]
        shown = self.columns.assign(
            **{"max |A − B|": largest.map("{:.3g}".format)},
            relative=[relative_cell(*pair) for pair in zip(largest, relative, strict=True)],
        )
        return shown.to_markdown(index=False, disable_numparse=True)

    def text(self) -> str:
        """The comparison as Markdown, for the console (`make compare`)."""
        lines = [f"{self.matched} units in both files; {len(self.only_a)} only in A, {len(self.only_b)} only in B"]
        for name, keys in (
            ("only in A", self.only_a),
            ("only in B", self.only_b),
            ("recomputed from changed inputs (host or data)", self.changed_inputs),
            ("differing beyond the tolerances", self.differing),
            ("numeric columns in one file only", self.one_sided),
        ):
            lines += [counted(name, keys)] if keys else []
        lines += ["", "## Largest difference per column (timings not compared)", "", self.largest()]
        lines += ["", "## Mean ΔRMSE % per host × variant", "", self.variants.to_markdown(index=False, floatfmt="+.4f")]
        return "\n".join(lines)

    @property
    def failures(self) -> dict[str, tuple[str, ...]]:
        """What fails a reproduction check: differing rows and one-sided columns always; extra rows,
        and missing ones when every row is required, unless the grid changed on purpose."""
        ref = self.reference or Reference(pd.DataFrame())
        failed = {"differing": self.differing, "extra": () if ref.grid_changed else self.extra}
        failed["columns in one file only"] = self.one_sided
        failed["missing"] = self.missing if ref.require_all and not ref.grid_changed else ()
        return failed

    @property
    def ok(self) -> bool:
        return not any(self.failures.values())

    def line(self) -> str:
        """`reproduced: <k>/<n> rows within 1e-05 (<the extremes>, <m> columns) vs <source>` (`Extremes.text`),
        then the rows from changed inputs, the subset, what failed, and both machines."""
        ref = self.reference or Reference(pd.DataFrame())
        text = (
            f"reproduced: {self.within}/{self.compared} rows within {TOLERANCES.rel:g} "
            f"({self.extremes.text()}, {len(self.columns)} columns) vs {ref.source}"
        )
        if self.changed_inputs:
            text += f"; {counted('recomputed from changed inputs', self.changed_inputs)}"
        if ref.grid_changed:
            changes = [counted(kind, keys) for kind, keys in (("new", self.extra), ("dropped", self.missing)) if keys]
            text += f"; grid changed: {'; '.join(changes)}"
        elif self.missing and not ref.require_all:
            text += f"; subset: {self.compared} of the reference's {len(ref.frame)} rows ran"
        text += "".join(f"; {counted(kind, keys)}" for kind, keys in self.failures.items() if keys)
        return text + f"; reference computed on {self.machines[1]}; this run on {self.machines[0]}"


def counted(name: str, keys: Sequence[str]) -> str:
    """`<n> <name>: <the first five keys> ...`."""
    return f"{len(keys)} {name}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"


def keyed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """`frame` indexed by `KEY`; RunnerError naming `name` when a key column is absent, a seed is not
    an integer, a key occurs twice or a number column holds text."""
    absent = [column for column in KEY if column not in frame.columns]
    if absent:
        raise RunnerError(f"{name} lacks the columns {absent}; pass a retrofit_rmse.csv")
    seeds = pd.to_numeric(frame["seed"], errors="coerce")
    if seeds.isna().any() or (seeds % 1 != 0).any():
        raise RunnerError(f"{name} has a seed that is not an integer; pass a retrofit_rmse.csv")
    numeric = pd.api.types.is_numeric_dtype
    texts = [c for c in frame.columns if c in NUMERIC and not (numeric(frame[c]) or frame[c].isna().all())]
    if texts:
        raise RunnerError(f"{name}: column {texts[0]!r} holds text where numbers belong; pass a retrofit_rmse.csv")
    hparams = frame["hparams"].map(lambda h: "" if pd.isna(h) else str(h))
    frame = frame.assign(hparams=hparams, seed=seeds.astype(int)).set_index(KEY)
    repeated = frame.index[frame.index.duplicated()]
    if len(repeated):
        raise RunnerError(f"{name} lists {len(repeated)} units twice, e.g. {label(repeated[0])}")
    return frame


def read_results(source: Path | str | io.StringIO, name: str) -> pd.DataFrame:
    """The results CSV `source` (a path or text); RunnerError naming `name` when it is missing, not a
    file, empty, not UTF-8 text or not a CSV."""
    if isinstance(source, str | Path) and not Path(source).is_file():
        why = "does not exist" if not Path(source).exists() else "is not a file"
        raise RunnerError(f"{name} {source} {why}; pass a retrofit_rmse.csv")
    try:
        return pd.read_csv(source, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        what = f"{name} {source}" if isinstance(source, str | Path) else name
        raise RunnerError(f"{what} is not a readable CSV ({str(err).splitlines()[0][:200]})") from None


def _compared(frame: pd.DataFrame) -> set[str]:
    """The numeric result columns of `frame` (the record's, and any it does not know; never its text
    columns, an all-blank `arm` reads as numbers), less the timings and identity columns."""
    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    return {c for c in numeric if c in NUMERIC or c not in COLUMNS} - TIMES - set(IDENTITY)


def _changed_inputs(a: pd.DataFrame, b: pd.DataFrame, both: pd.Index) -> np.ndarray:
    """Per matched row, whether its inputs (`INPUTS`, known in both files) differ."""
    changed = pd.Series(False, index=both)
    for column in (c for c in INPUTS if c in a and c in b):
        left, right = (f.loc[both, column].map(lambda v: "" if pd.isna(v) else str(v)) for f in (a, b))
        changed |= (left != "") & (right != "") & (left != right)
    return changed.to_numpy()


def _agreement(
    a: pd.DataFrame, b: pd.DataFrame, both: pd.Index, columns: Sequence[str], tolerances: Tolerances
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `both` and column of `columns` of the keyed frames `a` and `b`: |A − B|, it
    relative to |B|, whether the value is in one file only (`differences`), and whether they agree
    under `tolerances`."""
    left, right = (f.loc[both, list(columns)].to_numpy(dtype="float64") for f in (a, b))
    diff, rel, one_file = differences(left, right)
    atol = np.array([tolerances.delta_atol.get(c, tolerances.atol) for c in columns])
    return diff, rel, one_file, diff <= atol + tolerances.rel * np.abs(np.nan_to_num(right))


FLOOR_COLUMNS = {"rmse": "relative", "baseline_rmse": "relative", "delta_rmse_pct": "points"}
"""The columns a host's noise floor (% of its RMSE) speaks to: the RMSE levels by their relative
difference, ΔRMSE % by its difference in points."""


def across_devices(
    new: pd.DataFrame, reference: pd.DataFrame, floors: Mapping[str, float], tolerances: Tolerances = TOLERANCES
) -> pd.DataFrame:
    """Every unit of `new` (e.g. a GPU run of the grid) against the same unit of `reference` (the CPU
    record): one row per unit with its `host`, `unit` label, `verdict` and the `columns` that decide it.
    `equal`: every compared column (`compare`'s) within `tolerances` (1e-5 relative, the deltas'
    absolute slack besides); `within floor`: the columns
    that are not are all `FLOOR_COLUMNS` and each lies within the host's floor (`floors`: host ->
    % of RMSE); `differs`: otherwise (`columns` names the ones beyond); `only new` / `only reference`:
    a unit in one table only."""
    a_, b_ = keyed(new, "new"), keyed(reference, "reference")
    columns = sorted(_compared(a_) & _compared(b_))
    both = a_.index.intersection(b_.index)
    diff, rel, _, agree = _agreement(a_, b_, both, columns, tolerances)
    rows = []
    for i, key in enumerate(both):
        floor = floors.get(key[0], 0.0)
        beyond = [c for j, c in enumerate(columns) if not agree[i, j]]
        size = {c: 100 * rel[i, j] if FLOOR_COLUMNS.get(c) == "relative" else diff[i, j] for j, c in enumerate(columns)}
        outside = [c for c in beyond if c not in FLOOR_COLUMNS or not size[c] <= floor]
        verdict = "equal" if not beyond else "differs" if outside else "within floor"
        rows.append(dict(host=key[0], unit=label(key), verdict=verdict, columns=", ".join(outside or beyond)))
    for side, keys in (("only new", a_.index.difference(b_.index)), ("only reference", b_.index.difference(a_.index))):
        rows += [dict(host=key[0], unit=label(key), verdict=side, columns="") for key in keys]
    return pd.DataFrame(rows, columns=["host", "unit", "verdict", "columns"])


def compare(
    a: pd.DataFrame | Path | str,
    b: pd.DataFrame | Path | str,
    tolerances: Tolerances = TOLERANCES,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Compare results `a` with `b` (frames or paths of `retrofit_rmse.csv` files; `names` label them
    in errors) under `tolerances` (module docstring)."""
    a_, b_ = (
        keyed(read_results(f, n) if isinstance(f, str | Path) else f, n) for f, n in zip((a, b), names, strict=True)
    )
    a_numeric, b_numeric = _compared(a_), _compared(b_)
    columns = sorted(a_numeric & b_numeric)
    one_sided = [f"{c} ({names[0]} only)" for c in sorted(a_numeric - b_numeric)]
    one_sided += [f"{c} ({names[1]} only)" for c in sorted(b_numeric - a_numeric)]
    both = a_.index.intersection(b_.index)
    diff, rel, one_file, agree = _agreement(a_, b_, both, columns, tolerances)
    changed = _changed_inputs(a_, b_, both)
    worst = [int(np.argmax(diff[:, j])) if len(both) else None for j in range(len(columns))]
    table = [
        (c, diff[i, j], rel[i, j], label(both[i]), bool(agree[~changed, j].all()))
        if i is not None
        else (c, np.nan, np.nan, "(no unit in both)", True)
        for j, (c, i) in enumerate(zip(columns, worst, strict=True))
    ]
    differing = [
        f"{label(key)} ({', '.join(c for c, ok in zip(columns, row, strict=True) if not ok)})"
        for key, row, moved in zip(both, agree, changed, strict=True)
        if not moved and not row.all()
    ]
    pair = both if "delta_rmse_pct" in a_ and "delta_rmse_pct" in b_ else both[:0]
    deltas = pd.DataFrame({side: f.get("delta_rmse_pct", np.nan) for side, f in (("A", a_), ("B", b_))}, index=pair)
    variants = deltas.groupby(["host", "variant", "hparams"]).agg(units=("A", "size"), A=("A", "mean"), B=("B", "mean"))
    return Comparison(
        matched=len(both),
        columns=pd.DataFrame(table, columns=["column", "max |A − B|", "relative", "where", "within tolerance"]),
        differing=tuple(differing),
        changed_inputs=tuple(label(k) for k, moved in zip(both, changed, strict=True) if moved),
        only_a=tuple(label(k) for k in a_.index.difference(b_.index)),
        only_b=tuple(label(k) for k in b_.index.difference(a_.index)),
        one_sided=tuple(one_sided),
        variants=variants.reset_index().assign(**{"A − B": lambda v: v["A"] - v["B"]}),
        extremes=extremes(diff[~changed], rel[~changed], one_file[~changed], columns),
    )


def _git(path: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True, text=True, check=False)
    except OSError:  # no git on this machine
        return None


def read_reference(
    path: Path, commit: str | None = None, *, require_all: bool = False, grid_changed: bool = False
) -> Reference:
    """The CSV at `path`: as in the working tree (`commit` None), or as committed at `commit` (e.g.
    `HEAD`) in the git checkout holding it — outside any checkout, the file as it is, and the source
    says so; without `git` on PATH a `commit` is refused (the checkout could not be told apart).
    Its keys are checked now, before any sweep runs. RunnerError when the file (or its committed
    version) does not exist."""
    path = Path(path).resolve()
    shown = _git(path, "show", f"{commit}:./{path.name}") if commit is not None else None
    if commit is not None and shown is None:
        raise RunnerError(
            f"reference_commit={commit} needs git, which is not on PATH; put git on PATH, "
            "or pass reference_commit=null to read the working tree"
        )
    if shown is not None and shown.returncode == 0:
        source = f"{path} at {commit} ({_git(path, 'rev-parse', '--short', commit).stdout.strip()})"
        frame = read_results(io.StringIO(shown.stdout), f"reference {source}")
    elif shown is not None and "not a git repository" not in shown.stderr:
        reason = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else "git show failed"
        raise RunnerError(
            f"reference {path} at {commit}: {reason}; commit it, or pass reference_commit=null to read the working tree"
        )
    else:
        if not path.is_file():
            raise RunnerError(f"reference {path} does not exist; pass reference=<a retrofit_rmse.csv to compare with>")
        source = f"{path} ({'working tree' if commit is None else f'working tree: not a git checkout, no {commit}'})"
        frame = read_results(path, f"reference {path}")
    keyed(frame, f"reference {source}")
    return Reference(frame, source, require_all, grid_changed)


def machines_of(frame: pd.DataFrame) -> str:
    """The machines (`machine` column) that computed the rows of `frame`, or "a machine not recorded"."""
    named = sorted({m for m in frame.get("machine", pd.Series(dtype=str)).dropna().astype(str) if m})
    return " + ".join(named) if named else "a machine not recorded"


def check(new: pd.DataFrame, reference: Reference | pd.DataFrame) -> Comparison:
    """`compare` of `new` (rows of `retrofit_rmse.csv`) with `reference` (a bare frame: read from
    memory), as a reproduction check (`Comparison.ok`, `Comparison.line`)."""
    reference = reference if isinstance(reference, Reference) else Reference(reference)
    comparison = compare(new, reference.frame, names=("new", "reference"))
    return replace(comparison, reference=reference, machines=(machines_of(new), machines_of(reference.frame)))


def verify(results_dir: Path, reference: Reference | pd.DataFrame, new: pd.DataFrame | None = None) -> Comparison:
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
