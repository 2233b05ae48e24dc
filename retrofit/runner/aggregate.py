"""Aggregation (TabArena-style, a step of its own): unit rows → CSV, paper-style table, plot.

`retrofit_rmse.csv`: one row per host × dataset × seed × variant (× hyper-parameter overrides).
`retrofit_table.md`: mean ΔRMSE% per host × variant over the cases with a 95% CI from the
two-level bootstrap of `retrofit.runner.bootstrap` (datasets, then seeds within), the count of
cases above / below zero and the predict-time ratio to the baseline (median over the timed units
of each unit's median interleaved ratio, with the range of those medians); then per-dataset rows
(mean over seeds). `retrofit_deltas.png`: every case's ΔRMSE% per variant. The table also gives the
mean matched deltas of the whole predictive distribution (NLL, CRPS, 90% coverage; `retrofit.metrics`)
with the same CI, plotted in `retrofit_distribution_deltas.png`. The sink / presence arms beyond the
variants' own units (`retrofit.runner.decomposition`) are in the CSV but not in the table and plots;
they get `decomposition.{csv,md,png}`.
"""

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from retrofit.io import write_atomic, write_png, write_text_atomic
from retrofit.runner.bootstrap import N_BOOTSTRAP, cluster_bootstrap_ci

COLUMNS = [
    "dataset",
    "seed",
    "variant",
    "host",
    "device",
    "n_train",
    "n_test",
    "n_features",
    "rmse",
    "baseline_rmse",
    "delta_rmse_pct",
    "nll",
    "baseline_nll",
    "delta_nll",
    "crps",
    "baseline_crps",
    "delta_crps_pct",
    "coverage_90",
    "baseline_coverage_90",
    "delta_coverage_90",
    "tau",
    "tau_c",
    "eps_den",
    "eps_mode",
    "predict_seconds",
    "baseline_predict_seconds",
    "predict_time_ratio",
    "predict_time_ratio_min",
    "predict_time_ratio_max",
    "fit_seconds",
    "n_categorical",
    "n_missing_target",
    "n_estimators",
    "hparams",
]


def frame_of(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Unit rows as a frame with `COLUMNS` (hparams as `k=v,...`), sorted; empty frame if none."""
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["hparams"] = frame["hparams"].map(lambda h: ",".join(f"{k}={v}" for k, v in sorted(h.items())) if h else "")
    return frame.sort_values(["host", "dataset", "seed", "variant", "hparams"], ignore_index=True)


DISTRIBUTION_DELTAS = {"delta_nll": "ΔNLL (nats)", "delta_crps_pct": "ΔCRPS %", "delta_coverage_90": "Δcoverage 90"}
"""The matched deltas of the whole predictive distribution (`retrofit.metrics`) -> their labels."""


def bootstrap_ci(group: pd.DataFrame, column: str = "delta_rmse_pct") -> tuple[float, float]:
    """95% CI of the mean `column` of `group` (cases of several datasets and seeds)."""
    return cluster_bootstrap_ci([g.to_numpy() for _, g in group.groupby("dataset")[column]])


def mean_with_ci(group: pd.DataFrame, column: str) -> str:
    """`mean [low, high]` of `column` over `group`, the CI as `bootstrap_ci`'s."""
    low, high = bootstrap_ci(group, column)
    return f"{group[column].mean():+.4f}" + (f" [{low:+.4f}, {high:+.4f}]" if len(group) > 1 else "")


def time_ratio(group: pd.DataFrame) -> str:
    """Median predict-time ratio over the timed units of `group`, the range of their medians, the count."""
    ratios = group["predict_time_ratio"].dropna()
    if ratios.empty:
        return "not timed"
    return f"{ratios.median():.2f}× [{ratios.min():.2f}, {ratios.max():.2f}] (n={len(ratios)})"


def _variant_label(frame: pd.DataFrame, sep: str = " ") -> pd.Series:
    """`variant`, with its hyper-parameter overrides appended when there are any."""
    return frame["variant"] + frame["hparams"].map(lambda h: f"{sep}({h})" if h else "")


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean ΔRMSE% per host × variant (× hparams) over the cases, with bootstrap 95% CI."""
    rows = []
    for (host, variant), group in frame.assign(variant=_variant_label(frame)).groupby(["host", "variant"]):
        low, high = bootstrap_ci(group)
        delta = group["delta_rmse_pct"]
        rows.append(
            {
                "host": host,
                "variant": variant,
                "cases": len(group),
                "mean ΔRMSE %": f"{delta.mean():+.3f}",
                "95% CI": f"[{low:+.3f}, {high:+.3f}]" if len(group) > 1 else "n/a (1 case)",
                "cases > 0 / < 0": f"{(delta > 0).sum()} / {(delta < 0).sum()}",
                "max abs ΔRMSE %": f"{delta.abs().max():.3f}",
                "predict time / baseline": time_ratio(group),
                **{f"mean {label} [95% CI]": mean_with_ci(group, col) for col, label in DISTRIBUTION_DELTAS.items()},
            }
        )
    return pd.DataFrame(rows)


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """Per host × dataset: baseline RMSE and mean ΔRMSE% per variant (means over seeds)."""
    deltas = frame.assign(variant=_variant_label(frame)).pivot_table(
        index=["host", "dataset"], columns="variant", values="delta_rmse_pct", aggfunc="mean"
    )
    deltas = deltas.map(lambda v: f"{v:+.3f}" if pd.notna(v) else "not run")  # e.g. closed variants on v2
    base = frame.groupby(["host", "dataset"]).agg({"baseline_rmse": "mean", "seed": "nunique"})
    base = base.rename(columns={"baseline_rmse": "baseline RMSE", "seed": "seeds"})
    base["baseline RMSE"] = base["baseline RMSE"].map(lambda v: f"{v:.4g}")
    return base.join(deltas).reset_index()


def table_markdown(frame: pd.DataFrame) -> str:
    """The paper-style table (see module docstring) as Markdown."""
    cases = frame[["host", "dataset", "seed"]].drop_duplicates()
    return "\n".join(
        [
            "# Retrofit RMSE: matched ΔRMSE% = 100 · (RMSE(variant) − RMSE(baseline)) / RMSE(baseline)",
            "",
            f"{len(cases)} host × dataset × seed cases; 95% CI: two-level bootstrap, datasets then seeds within "
            f"({N_BOOTSTRAP} draws, percentile). Predict time / baseline: median of per-unit medians of "
            "interleaved, paired ratios (after a warm-up), [range of those medians], n timed units.",
            "",
            summary(frame).to_markdown(index=False, disable_numparse=True),
            "",
            "## Per dataset (mean over seeds, ΔRMSE %)",
            "",
            per_dataset(frame).to_markdown(index=False, disable_numparse=True),
            "",
        ]
    )


def plot_deltas(frame: pd.DataFrame, path: Path) -> Path:
    """Per-case ΔRMSE% per variant (one marker per case, coloured by dataset), mean ± 95% CI."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state

    keyed = frame.assign(k=frame["host"] + "\n" + _variant_label(frame, sep="\n"))
    labels = sorted(keyed["k"].unique())
    datasets = sorted(frame["dataset"].unique())
    colours = dict(zip(datasets, colormaps["tab10"].colors, strict=False))  # 10 colours: up to 10 datasets
    fig = Figure(figsize=(1.8 * len(labels) + 3, 4.5))
    ax = fig.subplots()
    jitter = np.random.default_rng(0)
    for x, label in enumerate(labels):
        group = keyed[keyed["k"] == label]
        for dataset, rows in group.groupby("dataset"):
            xs = x + jitter.uniform(-0.15, 0.15, len(rows))
            ax.scatter(xs, rows["delta_rmse_pct"], s=18, color=colours[dataset], label=dataset if x == 0 else None)
        low, high = bootstrap_ci(group)
        mean = group["delta_rmse_pct"].mean()
        yerr = [[mean - low], [high - mean]] if np.isfinite(low) else None
        ax.errorbar(x + 0.3, mean, yerr=yerr, fmt="D", color="black", capsize=4)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("ΔRMSE vs baseline (%)")
    ax.set_title("Matched RMSE change per case (black: mean, two-level bootstrap 95% CI)")
    ax.legend(title="dataset", fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    write_png(fig, path)
    return path


def plot_distribution_deltas(frame: pd.DataFrame, path: Path) -> Path:
    """One panel per distribution delta (`DISTRIBUTION_DELTAS`): per-case values per host × variant
    (grey dots) and their mean with the 95% CI of `bootstrap_ci` (black)."""
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state

    keyed = frame.assign(k=frame["host"] + "\n" + _variant_label(frame, sep="\n"))
    labels = sorted(keyed["k"].unique())
    fig = Figure(figsize=(1.2 * len(labels) + 2, 9))
    axes = fig.subplots(len(DISTRIBUTION_DELTAS), 1, sharex=True)
    jitter = np.random.default_rng(0)
    for ax, (column, label) in zip(axes, DISTRIBUTION_DELTAS.items(), strict=True):
        for x, group in enumerate(keyed[keyed["k"] == k] for k in labels):
            ax.scatter(x + jitter.uniform(-0.15, 0.15, len(group)), group[column], s=8, color="grey", alpha=0.6)
            low, high = bootstrap_ci(group, column)
            mean = group[column].mean()
            yerr = [[mean - low], [high - mean]] if np.isfinite(low) else None
            ax.errorbar(x + 0.3, mean, yerr=yerr, fmt="D", color="black", capsize=4)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_ylabel(label)
    axes[-1].set_xticks(range(len(labels)), labels, fontsize=7)
    axes[0].set_title("Matched change of the predictive distribution per case (black: mean, 95% CI)")
    fig.tight_layout()
    write_png(fig, path)
    return path


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """`frame` as CSV, atomically."""
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))


def aggregate(results_dir: Path, rows: list[dict[str, Any]], *, table: bool = True) -> pd.DataFrame:
    """Write `retrofit_rmse.csv` of `rows` (and, with `table`, the Markdown table, the plots and the
    sink / presence decomposition, `retrofit.runner.decomposition`) under `results_dir`."""
    from retrofit.runner.decomposition import Decomposition, arm_extras, write_decomposition  # built on this module

    results_dir = Path(results_dir)
    frame = frame_of(rows)
    write_csv(frame, results_dir / "retrofit_rmse.csv")
    if table and len(frame):
        decomposition = Decomposition.load()
        main = frame[~arm_extras(frame, decomposition)]  # the decomposition arms have a table of their own
        write_text_atomic(results_dir / "retrofit_table.md", table_markdown(main))
        plot_deltas(main, results_dir / "retrofit_deltas.png")
        plot_distribution_deltas(main, results_dir / "retrofit_distribution_deltas.png")
        write_decomposition(frame, results_dir, decomposition)
    return frame
