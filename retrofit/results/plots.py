"""The one plot of the aggregation: per-case values as dots (coloured by dataset) and their mean with
the two-level bootstrap 95 % CI (`retrofit.results.bootstrap.frame_ci`), one panel per host on its
own scale. The retrofit table, the distribution deltas and the decomposition all draw with it.

matplotlib's `Figure` is used directly: no pyplot, so no backend switch and no global figure state.
"""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.io import write_png
from retrofit.results.bootstrap import frame_ci

Panel = tuple[str, str, float]
"""(column, y-axis label with its unit, scale applied to the column's values)."""


def dataset_colours(datasets: Sequence[str]) -> dict[str, tuple]:
    """A fixed colour per dataset (tab10 for up to 10 datasets, tab20 beyond)."""
    from matplotlib import colormaps

    names = sorted(set(datasets))
    palette = colormaps["tab10" if len(names) <= 10 else "tab20"].colors
    return {name: palette[i % len(palette)] for i, name in enumerate(names)}


def dots_with_ci(frame: pd.DataFrame, groups: Sequence[str], panels: Sequence[Panel], title: str, path: Path) -> Path:
    """Write `path`: a grid of one row per panel (`Panel`) and one column per host of `frame`; in each,
    one x position per value of the `groups` column (in the given order, those the host has), the
    cases as dots coloured by dataset, the mean ± 95 % CI in black. Each panel has its own y scale."""
    from matplotlib.figure import Figure

    hosts = sorted(frame["host"].unique())
    colours = dataset_colours(frame["dataset"].unique())
    frame = frame.assign(_group=frame[groups[0]] if len(groups) == 1 else frame[list(groups)].agg("\n".join, axis=1))
    labels = list(dict.fromkeys(frame["_group"]))
    width = max(3.0, 1.1 * max(frame.groupby("host")["_group"].nunique()) + 1.0)
    fig = Figure(figsize=(width * len(hosts) + 1.6, 3.2 * len(panels) + 0.6))
    axes = fig.subplots(len(panels), len(hosts), squeeze=False)
    jitter = np.random.default_rng(0)
    for col, host in enumerate(hosts):
        rows = frame[frame["host"] == host]
        present = [label for label in labels if label in set(rows["_group"])]
        for row, (column, ylabel, scale) in enumerate(panels):
            ax = axes[row][col]
            for x, label in enumerate(present):
                group = rows[rows["_group"] == label]
                for dataset, cases in group.groupby("dataset"):
                    xs = x + jitter.uniform(-0.15, 0.15, len(cases))
                    ax.scatter(xs, scale * cases[column], s=14, color=colours[dataset], label=dataset)
                low, high = frame_ci(group, column)
                mean = group[column].mean()
                yerr = [[scale * (mean - low)], [scale * (high - mean)]] if np.isfinite(low) else None
                ax.errorbar(x + 0.32, scale * mean, yerr=yerr, fmt="D", color="black", capsize=4, ms=5)
            ax.axhline(0.0, color="grey", lw=0.8)
            ax.set_xticks(range(len(present)), present if row == len(panels) - 1 else [], fontsize=8)
            ax.set_xlim(-0.6, len(present) - 0.3)
            if col == 0:
                ax.set_ylabel(ylabel)
            if row == 0:
                ax.set_title(host)
    handles = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(handles.values(), handles.keys(), title="dataset", loc="center right", fontsize=8)
    fig.suptitle(f"{title} (black: mean, two-level bootstrap 95% CI; each panel on its own scale)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 1.4 / fig.get_figwidth(), 1))
    return write_png(fig, path)
