"""The figures of the explanation benchmark (`benchmarks.removal_vs_refit.explain_table`): speed-up
and agreement with the refit per host and dataset, and one row's Shapley values per host."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

PLOTTED = (
    ("SV", "closed_batched"),
    ("SV", "closed_batched_rows"),
    ("SV", "stock_zeroed"),
    ("k-SII", "closed_batched"),
    ("LOO", "closed_batched"),
)
"""The (index, method) bars of the bench plot."""
EXAMPLE_METHODS = ("closed_batched", "refit_shapiq", "stock_zeroed")
"""The methods whose Shapley values the example plot shows."""


def plot_bench(table: pd.DataFrame) -> Figure:
    """Speed-up over the refit (log scale, min-max over rounds) and rank agreement with it, per
    dataset, for the `PLOTTED` (index, method) pairs present in `table`; one row per host."""
    hosts = list(dict.fromkeys(table.host))
    figure = Figure(figsize=(12, 4 * len(hosts)))
    axes = figure.subplots(len(hosts), 2, squeeze=False)
    for (speed, agreement), host in zip(axes, hosts, strict=True):
        _host_bars(table[table.host == host], speed, agreement)
        speed.set_title(host)
        agreement.set_title(host)
    figure.suptitle("Removal: batched closed removal vs a refit per coalition vs zeroing")
    figure.tight_layout()
    return figure


def _host_bars(table: pd.DataFrame, speed: Any, agreement: Any) -> None:
    """One host's bars of `plot_bench` on the axes `speed` and `agreement`."""
    datasets = list(dict.fromkeys(table.dataset))
    x = np.arange(len(datasets))
    bars = [pair for pair in PLOTTED if ((table["index"] == pair[0]) & (table.method == pair[1])).any()]
    width = 0.8 / len(bars)
    for i, (index, method) in enumerate(bars):
        rows = table[(table["index"] == index) & (table.method == method)].set_index("dataset").loc[datasets]
        offset, label = x + (i - (len(bars) - 1) / 2) * width, f"{method} ({index})"
        errors = [rows.speedup_vs_refit - rows.speedup_min, rows.speedup_max - rows.speedup_vs_refit]
        speed.bar(offset, rows.speedup_vs_refit, width=width, yerr=errors, capsize=2, label=label)
        agreement.bar(offset, rows.rank_corr_median, width=width, label=label)
    speed.set_yscale("log")
    speed.axhline(1, color="k", lw=0.8)
    speed.set_ylabel("speed-up over the refit per coalition (CPU time)")
    agreement.set_ylabel("median Spearman ρ vs the refit")
    agreement.set_ylim(-1, 1.05)
    for axis in (speed, agreement):
        axis.set_xticks(x, datasets, rotation=30)
        axis.legend(fontsize=7)


def plot_example(items: Sequence[Any]) -> Figure:
    """The first explained row's Shapley values per method, one panel per item (a
    `benchmarks.removal_vs_refit.dataset.Explained`: one host on one dataset)."""
    figure = Figure(figsize=(7 * len(items), 3.6))
    for axis, item in zip(figure.subplots(1, len(items), squeeze=False)[0], items, strict=True):
        y = np.arange(len(item.feature_names))
        for offset, method in zip((-0.27, 0, 0.27), EXAMPLE_METHODS, strict=True):
            axis.barh(y + offset, item.attributions["SV", method][0], height=0.27, label=method)
        axis.set_yticks(y, item.feature_names)
        axis.axvline(0, color="k", lw=0.8)
        axis.set_xlabel("Shapley value (prediction units)")
        axis.set_title(f"{item.host}, {item.dataset}: one test row, {item.n_coalitions['SV']} coalitions")
        axis.legend(fontsize=8)
    return figure
