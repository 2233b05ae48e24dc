"""The τ sweep's table and plot from its unit records: mean ΔRMSE% per host × variant × c with its
95% CI (two-level bootstrap, `retrofit.results.bootstrap`), and that against c, one panel per host."""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import write_png
from retrofit.labels import DEVICE_DOC
from retrofit.results.bootstrap import frame_ci
from retrofit.results.record import UnitRecord, frame_of

COLUMN_DOCS = {
    "host": ("label", "host label (`host.name`)"),
    "device": DEVICE_DOC,
    "variant": ("label", "retrofit variant"),
    "c": ("dimensionless", "c of the calibrated tau rule, tau = c · median ||h||²"),
    "cases": ("count", "dataset × seed cases behind the mean"),
    "mean_delta_rmse_pct": ("%", "mean matched ΔRMSE vs the stock host over the cases"),
    "ci_low": ("%", "lower end of its 95 % CI (two-level bootstrap: datasets, then seeds)"),
    "ci_high": ("%", "upper end of that CI"),
    "max_abs_delta_rmse_pct": ("%", "largest |ΔRMSE| over the cases"),
}
"""Column -> (unit, meaning) of `tau_sweep.csv` (`tau_table`), in order."""


def tau_table(records: Sequence[UnitRecord]) -> pd.DataFrame:
    """Mean ΔRMSE% (and its 95% CI, datasets then seeds resampled) per host × device × variant × c over
    `records`; RunnerError when no variant beyond the baseline ran."""
    rows = frame_of(records)
    rows = rows[rows["variant"] != "baseline"]
    if rows.empty:
        raise RunnerError("the tau sweep has no variant units; list variants=[...] in configs/tau_sweep.yaml")
    table = []
    for (host, device, variant, c), group in rows.groupby(["host", "device", "variant", "tau_c"]):
        low, high = frame_ci(group)
        delta = group["delta_rmse_pct"]
        values = (host, device, variant, c, len(group), delta.mean(), low, high, delta.abs().max())
        table.append(dict(zip(COLUMN_DOCS, values, strict=True)))
    return pd.DataFrame(table, columns=list(COLUMN_DOCS))


LINEAR_WITHIN = 0.1
"""The ΔRMSE % within which the plot's y axis is linear (logarithmic beyond, both signs)."""


def plot_tau(table: pd.DataFrame, path: Path, defaults: dict[str, float]) -> Path:
    """Mean ΔRMSE% against c (log axis; symlog ΔRMSE axis, linear within ±`LINEAR_WITHIN` %, its
    ticks written as plain numbers) per variant with its 95% CI band, one panel per host on its own
    scale; a dotted line at each variant's default c (`defaults`)."""
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state
    from matplotlib.ticker import FuncFormatter

    hosts = sorted(table["host"].unique())
    fig = Figure(figsize=(5.2 * len(hosts), 4.2))
    axes = fig.subplots(1, len(hosts), squeeze=False)[0]
    for ax, host in zip(axes, hosts, strict=True):
        for variant, group in table[table["host"] == host].groupby("variant"):
            group = group.sort_values("c")
            (line,) = ax.plot(group["c"], group["mean_delta_rmse_pct"], marker="o", label=variant)
            ax.fill_between(group["c"], group["ci_low"], group["ci_high"], alpha=0.2, color=line.get_color())
        for c in sorted(set(defaults.values())):
            names = ", ".join(sorted(n for n, v in defaults.items() if v == c))
            ax.axvline(c, color="grey", ls=":", lw=1.2, label=f"default c = {c:g} ({names})")
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=LINEAR_WITHIN)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.set_xlabel("calibration constant c  (tau = c · median ||h||²)")
        ax.set_ylabel(f"mean ΔRMSE vs baseline (%)\nlinear within ±{LINEAR_WITHIN:g}, logarithmic beyond")
        cases = int(table.loc[table["host"] == host, "cases"].max())
        ax.set_title(f"{host} ({cases} cases, bootstrap 95% CI)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return write_png(fig, path)
