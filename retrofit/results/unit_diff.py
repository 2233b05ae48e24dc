"""Two results files unit by unit: the one diff behind `make diff` and the reproduction check.

`diff_units(a, b, tolerances)` matches rows on the unit key (`record.KEY`) and compares every numeric
result column both files have — not the timings (`TIMES`: they measure the machine and its load)
nor the columns that say what a row was computed from (`record.IDENTITY`). A value agrees when
`|A − B| <= atol + rel · |B|` (`Tolerances`; NaN agrees with NaN only). Per column it gives the
largest |A − B|, relative to |B|, and its unit; per host × variant the mean ΔRMSE % in A and B.
Equal values differ by 0; where B is 0 and A is not there is no relative difference, and that
|A − B| is said on its own, as is a value in one file only (`retrofit.results.differences`). A row
of A recomputed from other inputs than B's (host file or data: `record.INPUTS`) is listed as such,
never as a failure: that is how an intended host change is recorded (`make diff A= B=`).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.results.differences import Extremes, differences, extremes, relative_cell
from retrofit.results.record import COLUMNS, IDENTITY, INPUTS, NUMERIC
from retrofit.results.results_csv import Reference, keyed, read_results
from retrofit.unit_key import label

TIMES = frozenset(
    {"predict_seconds", "baseline_predict_seconds", "fit_seconds"}
    | {"predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max"}
)
"""Timings: numeric, but of the machine and its load, not of the method; never compared."""


@dataclass(frozen=True)
class Tolerances:
    """When two values agree: `|A − B| <= atol + rel · |B|`, with `atol` from `delta_atol` for the
    matched deltas (% points, nats, a fraction for coverage) and `atol` elsewhere. Across CPUs
    float32 kernels round in the last bits, far inside these (`make diff A=<csv> B=<csv>` shows
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
class UnitDiff:
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
        """The diff as Markdown, for the console (`make diff`)."""
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


def compared_columns(frame: pd.DataFrame) -> set[str]:
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


def agreement(
    a: pd.DataFrame, b: pd.DataFrame, both: pd.Index, columns: Sequence[str], tolerances: Tolerances
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `both` and column of `columns` of the keyed frames `a` and `b`: |A − B|, it
    relative to |B|, whether the value is in one file only (`differences`), and whether they agree
    under `tolerances`."""
    left, right = (f.loc[both, list(columns)].to_numpy(dtype="float64") for f in (a, b))
    diff, rel, one_file = differences(left, right)
    atol = np.array([tolerances.delta_atol.get(c, tolerances.atol) for c in columns])
    return diff, rel, one_file, diff <= atol + tolerances.rel * np.abs(np.nan_to_num(right))


def diff_units(
    a: pd.DataFrame | Path | str,
    b: pd.DataFrame | Path | str,
    tolerances: Tolerances = TOLERANCES,
    names: tuple[str, str] = ("A", "B"),
) -> UnitDiff:
    """Results `a` against `b` (frames or paths of `retrofit_rmse.csv` files; `names` label them
    in errors) under `tolerances` (module docstring)."""
    a_, b_ = (
        keyed(read_results(f, n) if isinstance(f, str | Path) else f, n) for f, n in zip((a, b), names, strict=True)
    )
    a_numeric, b_numeric = compared_columns(a_), compared_columns(b_)
    columns = sorted(a_numeric & b_numeric)
    one_sided = [f"{c} ({names[0]} only)" for c in sorted(a_numeric - b_numeric)]
    one_sided += [f"{c} ({names[1]} only)" for c in sorted(b_numeric - a_numeric)]
    both = a_.index.intersection(b_.index)
    diff, rel, one_file, agree = agreement(a_, b_, both, columns, tolerances)
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
    return UnitDiff(
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
