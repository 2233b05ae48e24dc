"""The scale check's goals and what the table says of them: met, NOT MET or undecided."""

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchmarks.scale.scale_rows import MEMORY_SAVING, PREDICT_MANY

GOALS: dict[str, dict[str, float]] = {
    "full_o": {"time_ratio": 1.05, "memory_ratio": 1.10, "clone_memory_ratio": 0.05, "ops_ratio": 1.15},
    "o_closed": {"time_ratio": 1.10, "memory_ratio": 1.10, "clone_memory_ratio": 0.05, "ops_ratio": 1.15},
    PREDICT_MANY: {"time_ratio": 1.0},
    MEMORY_SAVING: {"memory_ratio": 1.05},
}
"""Variant -> column -> the largest value that meets the goal."""


def goals_text() -> str:
    """The goals in one line."""
    return "; ".join(f"{v}: " + ", ".join(f"{c} <= {g}" for c, g in goals.items()) for v, goals in GOALS.items())


def verdict(value: float, goal: float, low: float = math.nan, high: float = math.nan) -> str:
    """`met` / `NOT MET` for a ratio against the largest value that meets its `goal`; for a timed
    ratio with its range over the rounds (`low`, `high`), `met` only when the whole range is within
    the goal and `NOT MET` only when none of it is: a range that straddles the goal is undecided."""
    if np.isfinite(low) and np.isfinite(high) and low <= goal < high:
        return f"undecided: its range [{low:.2f}x, {high:.2f}x] straddles the goal (more rounds or an idle machine)"
    return "met" if value <= goal else "NOT MET"


def goal_lines(table: pd.DataFrame) -> list[str]:
    """One line per measured row and goal (a row of a table other than the first has no operation
    count: not a line): the value as a ratio (a time ratio with its range over
    the rounds and the load the architecture ran under), the goal and its `verdict`."""
    lines = []
    for row in table.itertuples(index=False):
        for column, goal in GOALS.get(row.variant, {}).items():
            value = getattr(row, column)
            if row.status != "measured" or not np.isfinite(value):
                continue
            timed = column == "time_ratio"
            low, high = (row.time_ratio_min, row.time_ratio_max) if timed else (math.nan, math.nan)
            spread_text = (
                f" (min {low:.2f}x, max {high:.2f}x; load {row.load_start:.1f}-{row.load_end:.1f})" if timed else ""
            )
            lines.append(
                f"{row.arch:12s} {row.variant:13s} {column:19s} {value:6.3f}x{spread_text}{_table(row)} "
                f"goal <= {goal:.2f}x: {verdict(value, goal, low, high)}"
            )
    return lines


def _table(row: object) -> str:
    """` at <n_train>x<n_test>x<n_features>` of a row with its table's size ("" without)."""
    sizes = [getattr(row, key, math.nan) for key in ("n_train", "n_test", "n_features")]
    return f" at {'x'.join(str(int(n)) for n in sizes)}" if all(np.isfinite(sizes)) else ""


def worst_time_misses(table: pd.DataFrame) -> dict[str, str]:
    """arch -> its variant whose median time ratio misses its goal by the largest factor, among the
    misses that the whole range of rounds confirms (`verdict`; archs without one left out;
    predict_many aside: it has no stock side to profile against; rows without a time goal aside)."""
    misses = sorted(
        (row.time_ratio / GOALS[row.variant]["time_ratio"], row.arch, row.variant)
        for row in table.itertuples(index=False)
        if row.status == "measured"
        and "time_ratio" in GOALS.get(row.variant, {})
        and row.variant != PREDICT_MANY
        and verdict(row.time_ratio, GOALS[row.variant]["time_ratio"], row.time_ratio_min, row.time_ratio_max)
        == "NOT MET"
    )
    return {arch: variant for _, arch, variant in misses}  # ascending: an arch's worst comes last


def refused_lines(table: pd.DataFrame) -> Sequence[str]:
    """One line per refused row: what and why."""
    return [f"{r.arch} {r.variant}: refused: {r.reason}" for r in table.itertuples() if r.status == "refused"]
