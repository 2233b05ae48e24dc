"""Two results files unit by unit: the one comparison behind `make compare` and the reproduction check.

`compare(a, b, tolerances)` matches rows on the unit key (`record.KEY`). Every numeric result
column both files have is compared — not the timings (`TIMES`: they measure the machine and its
load) and not the columns that say what a row was computed from (`record.IDENTITY`) — and a
value agrees when `|A − B| <= atol + rel · |B|` (`Tolerances`: 1e-5 relative everywhere, and on
the matched deltas, differences of nearly equal levels, an absolute tolerance on their own scale;
NaN agrees with NaN only). For each column it gives the largest |A − B|, relative to |B|, and the
unit where it occurs; per host × variant the mean ΔRMSE % in A, in B and their difference.

A row of A whose inputs differ from B's (another host file or data: `record.INPUTS`, known on both
sides) was recomputed from changed inputs: it is listed as such, never as a failure — that is how
an intended host change is recorded. Rows in one file only and numeric columns in one file only
are listed. `retrofit.runner.reproduce` decides from a `Comparison` whether a run reproduced its
reference; `make compare` prints it (`Comparison.text`).

    make compare A=outputs/results/retrofit_rmse.csv B=results/retrofit_rmse.csv
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.errors import RunnerError
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
    texts = [c for c in frame.columns if c in NUMERIC and not _numeric_or_blank(frame[c])]
    if texts:
        raise RunnerError(f"{name}: column {texts[0]!r} holds text where numbers belong; pass a retrofit_rmse.csv")
    hparams = frame["hparams"].map(lambda h: "" if pd.isna(h) else str(h))
    frame = frame.assign(hparams=hparams, seed=seeds.astype(int)).set_index(KEY)
    repeated = frame.index[frame.index.duplicated()]
    if len(repeated):
        raise RunnerError(f"{name} lists {len(repeated)} units twice, e.g. {label(repeated[0])}")
    return frame


def _numeric_or_blank(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or column.isna().all()


def read_results(path: Path | str, name: str) -> pd.DataFrame:
    """The results CSV at `path`; RunnerError naming `name` and the file when it is missing, not a
    file, empty, not UTF-8 text or not a CSV."""
    path = Path(path)
    if not path.is_file():
        why = "does not exist" if not path.exists() else "is not a file"
        raise RunnerError(f"{name} {path} {why}; pass a retrofit_rmse.csv")
    try:
        return pd.read_csv(path, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise RunnerError(f"{name} {path} is not a readable CSV ({str(err).splitlines()[0][:200]})") from None


def _frame(source: pd.DataFrame | Path | str, name: str) -> pd.DataFrame:
    return read_results(source, name) if isinstance(source, str | Path) else source


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
    a_, b_ = (keyed(_frame(f, n), n) for f, n in zip((a, b), names, strict=True))
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
