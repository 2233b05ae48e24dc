"""Compare two `retrofit_rmse.csv` files unit by unit: a GPU run against the CPU reference, one
setting against another, a fresh run against the committed one.

`compare(a, b)` matches rows on the unit key (`record.KEY`); for every numeric column both files
have it gives the largest |A − B| over the matched units and the unit where it occurs (the
relative difference beside it, against |B|), and per host × variant the mean ΔRMSE % in A, in B and
their difference. Units only in one file are counted and listed. Unlike the reproduction check
(`retrofit.runner.reproduce`), nothing passes or fails: it shows where two runs differ.

    make compare A=outputs/results/retrofit_rmse.csv B=results/retrofit_rmse.csv
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.errors import RunnerError
from retrofit.runner.record import KEY

TIMES = ("predict_seconds", "baseline_predict_seconds", "fit_seconds")
"""Columns that measure wall time: listed last, as they differ between any two runs."""


@dataclass(frozen=True)
class Comparison:
    """`columns`: per numeric column, the largest |A − B| and where; `variants`: mean ΔRMSE % per
    host × variant in A and B; `only_a` / `only_b`: unit labels found in one file only; `matched`."""

    matched: int
    columns: pd.DataFrame
    variants: pd.DataFrame
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    def text(self) -> str:
        """The comparison as Markdown tables, for the console."""
        lines = [f"{self.matched} units in both files; {len(self.only_a)} only in A, {len(self.only_b)} only in B"]
        for label, keys in (("only in A", self.only_a), ("only in B", self.only_b)):
            if keys:
                lines.append(f"{label}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}")
        shown = self.columns.assign(
            **{col: self.columns[col].map(lambda v: f"{v:.3g}") for col in ("max |A − B|", "relative")}
        )
        lines += ["", "## Largest difference per column", "", shown.to_markdown(index=False, disable_numparse=True)]
        lines += ["", "## Mean ΔRMSE % per host × variant", "", self.variants.to_markdown(index=False, floatfmt="+.4f")]
        return "\n".join(lines)


def _label(key: tuple) -> str:
    return "/".join(f"{name}={value}" for name, value in zip(KEY, key, strict=True) if value != "")


def _keyed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    missing = [col for col in KEY if col not in frame]
    if missing:
        raise RunnerError(f"{name} lacks the columns {missing}; pass two retrofit_rmse.csv files")
    frame = frame.assign(hparams=frame["hparams"].fillna("").astype(str), seed=frame["seed"].astype(int))
    if frame.duplicated(KEY).any():
        raise RunnerError(f"{name} lists a unit twice, e.g. {_label(tuple(frame[frame.duplicated(KEY)][KEY].iloc[0]))}")
    return frame.set_index(KEY)


def compare(a: pd.DataFrame | Path | str, b: pd.DataFrame | Path | str) -> Comparison:
    """Compare results `a` with `b` (frames or paths of `retrofit_rmse.csv` files; see module docstring)."""
    frames = [pd.read_csv(f) if isinstance(f, str | Path) else f for f in (a, b)]
    a_, b_ = (_keyed(f, name) for f, name in zip(frames, ("A", "B"), strict=True))
    both = a_.index.intersection(b_.index)
    numeric = [c for c in a_.columns if c in b_.columns and all(pd.api.types.is_numeric_dtype(f[c]) for f in (a_, b_))]
    numeric = [c for c in numeric if c not in TIMES and not c.startswith("predict_time")] + [
        c for c in numeric if c in TIMES or c.startswith("predict_time")
    ]
    rows = []
    for column in numeric:  # flags (bool columns) are differenced as 0 / 1
        a_col, b_col = (f.loc[both, column].astype(float) for f in (a_, b_))
        diff = (a_col - b_col).abs()
        both_nan = a_col.isna() & b_col.isna()
        diff = diff.where(~both_nan, 0.0)
        if diff.isna().all() or not len(diff):
            rows.append({"column": column, "max |A − B|": np.nan, "relative": np.nan, "where": "(not in both)"})
            continue
        where = diff.fillna(np.inf).idxmax()  # a value in one file only counts as the largest difference
        scale = abs(b_.loc[where, column])
        rows.append(
            {
                "column": column,
                "max |A − B|": float(diff.fillna(np.inf).max()),
                "relative": float(diff.fillna(np.inf).max() / scale) if scale else np.nan,
                "where": _label(where),
            }
        )
    matched = a_.loc[both].reset_index()
    per_variant = (
        matched.assign(B=b_.loc[both, "delta_rmse_pct"].to_numpy())
        .rename(columns={"delta_rmse_pct": "A"})
        .groupby(["host", "variant", "hparams"], sort=True)
        .agg(units=("A", "size"), A=("A", "mean"), B=("B", "mean"))
        .reset_index()
    )
    per_variant["A − B"] = per_variant["A"] - per_variant["B"]
    return Comparison(
        matched=len(both),
        columns=pd.DataFrame(rows, columns=["column", "max |A − B|", "relative", "where"]),
        variants=per_variant,
        only_a=tuple(_label(k) for k in a_.index.difference(b_.index)),
        only_b=tuple(_label(k) for k in b_.index.difference(a_.index)),
    )
