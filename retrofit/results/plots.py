"""The one plot of the aggregation: per-case values as dots (coloured by dataset) and their mean with
the two-level bootstrap 95 % CI (`retrofit.results.bootstrap.frame_ci`), one panel per facet (a host,
or a host and variant) on its own scale, a host's noise floor shaded around zero where it is given.
The retrofit table, the distribution deltas and the decomposition all draw with it. Facets wrap
into rows so that a figure stays at most `MAX_WIDTH_IN` wide and its labels readable; titles wrap
to the width they have.

matplotlib's `Figure` is used directly: no pyplot, so no backend switch and no global figure state.
"""

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.io import write_png
from retrofit.results.bootstrap import frame_ci
from retrofit.results.render import percent

Panel = tuple[str, str, float]
"""(column, y-axis label with its unit, scale applied to the column's values)."""
MAX_WIDTH_IN = 18.0
"""The widest a figure is drawn (inches; 2,160 px at the PNG's 120 dpi), the legend included."""
LEGEND_IN, MIN_FACET_IN, GROUP_IN = 1.6, 4.0, 1.1
"""Inches of the legend, the narrowest facet, and one x position of a facet."""
CHARS_PER_IN = 11
"""Characters of 10-point text per inch of width, to wrap titles to the space they have."""
BAND_LABEL = "± noise floor"
"""What a shaded band is (`dots_with_ci`'s `bands`), said in the legend and in its panel with its half-width."""
MIN_BAND = 0.02
"""The least half-width a band is drawn with, as a share of its panel's y range: a floor far below the
cases' scale is drawn that wide, hatched, and its panel says so."""


def dataset_colours(datasets: Sequence[str]) -> dict[str, tuple]:
    """A fixed colour per dataset (tab10 for up to 10 datasets, tab20 beyond)."""
    from matplotlib import colormaps

    names = sorted(set(datasets))
    palette = colormaps["tab10" if len(names) <= 10 else "tab20"].colors
    return {name: palette[i % len(palette)] for i, name in enumerate(names)}


def wrapped(text: str, width_in: float) -> str:
    """`text` wrapped to lines that fit `width_in` inches of 10-point text (each line kept apart)."""
    width = max(20, int(CHARS_PER_IN * width_in))
    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


def dots_with_ci(
    frame: pd.DataFrame,
    groups: Sequence[str],
    panels: Sequence[Panel],
    title: str,
    path: Path,
    facets: Sequence[str] = ("host",),
    bands: Mapping[tuple[str, str], float] | None = None,
) -> Path:
    """Write `path`: per facet (each value of the `facets` columns, joined by ` · `, in the frame's order),
    one panel per `Panel` stacked; in each, one x position per value of the `groups` columns (in the
    given order, those the facet has), the cases as dots coloured by dataset, the mean ± 95 % CI in
    black. `bands` ((facet, column) -> half-width, in the column's unit before its scale) shades
    ± that width around zero on the facet's panel of that column (a host's noise floor, `draw_band`). Each panel
    has its own y scale; facets wrap into rows to stay within `MAX_WIDTH_IN`."""
    from matplotlib.figure import Figure

    frame = frame.assign(
        _group=frame[list(groups)].astype(str).agg("\n".join, axis=1),
        _facet=frame[list(facets)].astype(str).agg(" · ".join, axis=1),
    )
    names = list(dict.fromkeys(frame["_facet"]))
    facet_in = max(MIN_FACET_IN, GROUP_IN * max(frame.groupby("_facet")["_group"].nunique()) + 1.0)
    per_row = max(1, min(len(names), int((MAX_WIDTH_IN - LEGEND_IN) // facet_in)))
    facet_rows = math.ceil(len(names) / per_row)
    fig = Figure(figsize=(min(MAX_WIDTH_IN, facet_in * per_row + LEGEND_IN), 3.2 * len(panels) * facet_rows + 1.0))
    axes = fig.subplots(len(panels) * facet_rows, per_row, squeeze=False)
    for ax in axes.flat[len(names) * len(panels) :]:
        ax.set_visible(False)
    colours = dataset_colours(frame["dataset"].unique())
    labels = list(dict.fromkeys(frame["_group"]))
    jitter = np.random.default_rng(0)
    for i, name in enumerate(names):
        rows = frame[frame["_facet"] == name]
        present = [label for label in labels if label in set(rows["_group"])]
        for row, panel in enumerate(panels):
            ax = axes[(i // per_row) * len(panels) + row][i % per_row]
            draw_panel(ax, rows, present, panel, colours, jitter)
            band = (bands or {}).get((name, panel[0]))
            said = [name] if row == 0 else []
            said += [draw_band(ax, panel[2] * band, percent(band, signed=False))] if band is not None else []
            ax.set_xticks(range(len(present)), present if row == len(panels) - 1 else [], fontsize=8)
            if i % per_row == 0:
                ax.set_ylabel(panel[1])
            ax.set_title(wrapped("\n".join(said), facet_in), fontsize=10)
    visible = [ax for ax in axes.flat if ax.get_visible()]
    handles = {label: h for ax in visible for h, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(handles.values(), handles.keys(), title="dataset (dots)", loc="center right", fontsize=8)
    note = "black: mean, two-level bootstrap 95% CI; each panel on its own scale"
    fig.suptitle(wrapped(f"{title}\n({note})", fig.get_figwidth()), fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - LEGEND_IN / fig.get_figwidth(), 1))
    return write_png(fig, path)


def draw_band(ax, half: float, value: str) -> str:
    """On `ax`: ± `half` shaded around zero (labelled `BAND_LABEL`, for the legend), at least `MIN_BAND`
    of the panel's y range wide, then hatched; what the panel says of it, the half-width as `value`."""
    low, high = ax.get_ylim()
    drawn = max(half, MIN_BAND * (high - low))
    widened = drawn > half
    hatch = "////" if widened else None
    ax.axhspan(-drawn, drawn, color="tab:grey", alpha=0.35, lw=0, hatch=hatch, label=BAND_LABEL, zorder=0)
    ax.set_ylim(min(low, -drawn), max(high, drawn))
    return f"grey: {BAND_LABEL} {value}" + (" (drawn wider, to be seen)" if widened else "")


def draw_panel(ax, rows: pd.DataFrame, present: list[str], panel: Panel, colours: dict, jitter) -> None:
    """On `ax`: the cases of `rows` in each group of `present` as jittered dots, and their mean with
    its 95 % CI, of the panel's column times its scale; the zero line."""
    column, _, scale = panel
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
    ax.set_xlim(-0.6, len(present) - 0.3)
