"""The explain job's figure: per explained row, a bar per feature (and pair) of its share of the
prediction, largest first, red raising and blue lowering it, titled with the prediction and the
empty-table value the shares lead from. Read from `retrofit.explain`'s frame alone.

matplotlib's `Figure` is used directly: no pyplot, so no backend switch and no global figure state.
"""

import math
from pathlib import Path

import pandas as pd

from retrofit.io import write_png

MAX_ROWS = 12
"""Rows drawn, the first ones of the frame (the CSV holds all); the title says when there are more."""
MAX_TERMS = 10
"""Bars per row: the terms of largest |value| (the rest summed into one bar)."""
COLUMNS_OF_PANELS = 3


def plot_explanation(frame: pd.DataFrame, path: Path, title: str) -> Path:
    """Draw `frame` (`retrofit.explanation.COLUMNS`) into the PNG at `path`; returns `path`."""
    from matplotlib.figure import Figure

    rows = list(dict.fromkeys(frame["row"]))
    drawn = rows[:MAX_ROWS]
    n_cols = min(COLUMNS_OF_PANELS, len(drawn))
    n_panel_rows = math.ceil(len(drawn) / n_cols)
    fig = Figure(figsize=(5.2 * n_cols, 0.32 * (MAX_TERMS + 3) * n_panel_rows + 0.8), layout="constrained")
    axes = fig.subplots(n_panel_rows, n_cols, squeeze=False).ravel()
    for ax, row in zip(axes, drawn, strict=False):
        terms = frame[frame["row"] == row]
        order = terms["value"].abs().sort_values(ascending=False).index
        shown = terms.loc[order[:MAX_TERMS]]
        labels, heights = list(shown["features"]), list(shown["value"])
        if len(order) > MAX_TERMS:
            labels.append(f"{len(order) - MAX_TERMS} others")
            heights.append(float(terms.loc[order[MAX_TERMS:], "value"].sum()))
        ax.barh(range(len(heights)), heights, color=["#c0392b" if h > 0 else "#2e6fb7" for h in heights])
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.6)
        first = terms.iloc[0]
        ax.set_title(f"row {row}: {first['empty_prediction']:.4g} (no feature) → {first['prediction']:.4g}", fontsize=9)
        ax.set_xlabel("share of the prediction (target units)", fontsize=8)
    for ax in axes[len(drawn) :]:
        ax.set_visible(False)
    more = f"; the first {len(drawn)} of {len(rows)} rows drawn, all in the CSV" if len(rows) > len(drawn) else ""
    fig.suptitle(f"{title}{more}", fontsize=10)
    return write_png(fig, path)
