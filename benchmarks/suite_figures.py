"""The suite's figure and its Markdown page, from `benchmarks.suite`'s tables.

`plot_ratios`: per table, each host's RMSE over the table's best baseline (log scale, one marker per
host, the seeds' range as a bar), one panel per half. `render_page`: the summary (both halves, every
model), the matched ΔRMSE per host × variant with the noise floor, and each half's goal line.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.suite import GOALS, HALVES, WORST_OVER_RIDGE_GOAL
from retrofit.io import write_atomic, write_png

MARKERS = ("o", "s", "D", "^", "v", "P")


def plot_ratios(tables: pd.DataFrame, path: Path) -> Path:
    """The paper figure of the suite at `path` (see the module docstring)."""
    from matplotlib.figure import Figure

    hosts = sorted(tables.loc[tables["kind"] == "host", "model"].unique())
    counts = [tables.loc[tables["half"] == half, "dataset"].nunique() for half in HALVES]
    fig = Figure(figsize=(11, 0.28 * max(counts) + 1.6))
    axes = fig.subplots(1, len(HALVES), sharex=True)
    for ax, half in zip(axes, HALVES, strict=True):
        part = tables[(tables["half"] == half) & (tables["kind"] == "host")]
        order = part.groupby("dataset")["over_best"].min().sort_values().index.tolist()
        y = {dataset: i for i, dataset in enumerate(order)}
        for k, host in enumerate(hosts):
            rows = part[part["model"] == host]
            offset = (k - (len(hosts) - 1) / 2) * 0.22
            ys = rows["dataset"].map(y) + offset
            ax.hlines(ys, rows["over_best_min"], rows["over_best_max"], color=f"C{k}", lw=1, alpha=0.6)
            ax.scatter(rows["over_best"], ys, marker=MARKERS[k % len(MARKERS)], color=f"C{k}", s=22, label=host)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_yticks(range(len(order)), order, fontsize=8)
        ax.set_xscale("log")
        ax.set_title(f"{half.replace('_', '-')} half ({len(order)} tables)", fontsize=10)
        ax.set_xlabel("RMSE / the table's best baseline (log; bar: seeds' range)", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("Shipped hosts against the best of ridge, random forest and gradient boosting, per table")
    fig.tight_layout()
    return write_png(fig, path)


def _markdown(frame: pd.DataFrame) -> str:
    shown = frame.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f":
            shown[column] = shown[column].map(lambda v: "" if np.isnan(v) else f"{v:.3g}")
    return shown.to_markdown(index=False)


def render_page(summary: pd.DataFrame, deltas: pd.DataFrame, path: Path, source: str) -> Path:
    """`suite.md` at `path`: the summary and deltas tables of both halves; `source` names the command."""
    compact = summary[
        [
            "half",
            "model",
            "over_random_forest",
            "over_random_forest_low",
            "over_random_forest_high",
            "over_best_ridge_gb",
            "over_best",
            "wins_ridge",
            "wins_random_forest",
            "wins_gradient_boosting",
            "mean_rank",
            "worst_over_ridge",
            "worst_table",
            "meets_goal",
        ]
    ]
    goal = (
        f"Goal for a host on the held-out half: over_random_forest ≤ {GOALS['random_forest']}, "
        f"over_best_ridge_gb ≤ {GOALS['best_ridge_gb']}, worst_over_ridge ≤ {WORST_OVER_RIDGE_GOAL}."
    )
    text = "\n\n".join(
        [
            "# The suite: shipped hosts against ridge, a random forest and gradient boosting",
            f"Written by `{source}`; columns: docs/data_dictionary.md; the tables and their rule: docs/suite.md.",
            "## RMSE ratios (geometric means over tables, 95% bootstrap interval over tables)",
            goal,
            _markdown(compact),
            "## Matched ΔRMSE of the retrofit (mean over tables of each table's mean over seeds, %)",
            _markdown(deltas),
            "",
        ]
    )
    return write_atomic(path, lambda tmp: Path(tmp).write_text(text))
