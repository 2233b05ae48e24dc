"""Aggregation (a separate step, TabArena-style): unit files → CSV, paper-style table, plot.

`retrofit_rmse.csv`: one row per host × dataset × seed × variant (× hyper-parameter overrides).
`retrofit_table.md`: mean ΔRMSE% per host × variant over the cases with a bootstrap 95% CI
(cases resampled with replacement, `N_BOOTSTRAP` draws, percentile interval), then per-dataset
rows (mean over seeds). `retrofit_deltas.png`: every case's ΔRMSE% per variant.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from retrofit.io import write_atomic, write_png, write_text_atomic
from retrofit.runner.units import UnitStore

COLUMNS = [
    "dataset", "seed", "variant", "host", "n_train", "n_test", "n_features", "rmse", "baseline_rmse",
    "delta_rmse_pct", "tau", "eps_den", "predict_seconds",
    "baseline_predict_seconds", "fit_seconds", "n_categorical", "n_missing_target", "n_estimators", "hparams",
]  # fmt: skip
N_BOOTSTRAP = 10_000


def collect(runs_dir: Path) -> pd.DataFrame:
    """All unit rows under `runs_dir` as a frame with `COLUMNS`, sorted; empty frame if none."""
    rows = UnitStore(runs_dir).rows()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["hparams"] = frame["hparams"].map(lambda h: ",".join(f"{k}={v}" for k, v in sorted(h.items())) if h else "")
    return frame.sort_values(["host", "dataset", "seed", "variant", "hparams"], ignore_index=True)


def bootstrap_ci(values: np.ndarray, seed: int = 0, n: int = N_BOOTSTRAP) -> tuple[float, float]:
    """Percentile 95% CI of the mean of `values` by resampling them with replacement."""
    values = np.asarray(values, dtype="float64")
    if len(values) < 2:
        return float("nan"), float("nan")
    means = np.random.default_rng(seed).choice(values, size=(n, len(values)), replace=True).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _variant_label(frame: pd.DataFrame, sep: str = " ") -> pd.Series:
    """`variant`, with its hyper-parameter overrides appended when there are any."""
    return frame["variant"] + frame["hparams"].map(lambda h: f"{sep}({h})" if h else "")


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean ΔRMSE% per host × variant (× hparams) over the cases, with bootstrap 95% CI."""
    rows = []
    for (host, variant), group in frame.assign(variant=_variant_label(frame)).groupby(["host", "variant"]):
        low, high = bootstrap_ci(group["delta_rmse_pct"].to_numpy())
        rows.append(
            {
                "host": host,
                "variant": variant,
                "cases": len(group),
                "mean ΔRMSE %": f"{group['delta_rmse_pct'].mean():+.3f}",
                "95% CI": f"[{low:+.3f}, {high:+.3f}]" if len(group) > 1 else "n/a (1 case)",
                "max abs ΔRMSE %": f"{group['delta_rmse_pct'].abs().max():.3f}",
                "median predict time / baseline": f"{(group['predict_seconds'] / group['baseline_predict_seconds']).median():.2f}×",
            }
        )
    return pd.DataFrame(rows)


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """Per host × dataset: baseline RMSE and mean ΔRMSE% per variant (means over seeds)."""
    deltas = frame.assign(variant=_variant_label(frame)).pivot_table(index=["host", "dataset"], columns="variant", values="delta_rmse_pct", aggfunc="mean")
    deltas = deltas.map(lambda v: f"{v:+.3f}")
    base = frame.groupby(["host", "dataset"])[["baseline_rmse", "seed"]].agg({"baseline_rmse": "mean", "seed": "nunique"})
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
            f"{len(cases)} host × dataset × seed cases; 95% CI: bootstrap over cases ({N_BOOTSTRAP} draws, percentile).",
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keyed = frame.assign(k=frame["host"] + "\n" + _variant_label(frame, sep="\n"))
    labels = sorted(keyed["k"].unique())
    datasets = sorted(frame["dataset"].unique())
    colours = dict(zip(datasets, plt.get_cmap("tab10").colors))
    fig, ax = plt.subplots(figsize=(1.8 * len(labels) + 3, 4.5))
    jitter = np.random.default_rng(0)
    for x, label in enumerate(labels):
        group = keyed[keyed["k"] == label]
        for dataset, rows in group.groupby("dataset"):
            xs = x + jitter.uniform(-0.15, 0.15, len(rows))
            ax.scatter(xs, rows["delta_rmse_pct"], s=18, color=colours[dataset], label=dataset if x == 0 else None)
        low, high = bootstrap_ci(group["delta_rmse_pct"].to_numpy())
        mean = group["delta_rmse_pct"].mean()
        ax.errorbar(x + 0.3, mean, yerr=[[mean - low], [high - mean]] if np.isfinite(low) else None, fmt="D", color="black", capsize=4)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("ΔRMSE vs baseline (%)")
    ax.set_title("Matched RMSE change per case (black: mean, bootstrap 95% CI)")
    ax.legend(title="dataset", fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    write_png(fig, path)
    plt.close(fig)
    return path


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """`frame` as CSV, atomically."""
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))


def aggregate(results_dir: Path, *, table: bool = True) -> pd.DataFrame:
    """Write `retrofit_rmse.csv` (and, with `table`, the Markdown table and plot) under `results_dir`."""
    results_dir = Path(results_dir)
    frame = collect(results_dir / "runs")
    write_csv(frame, results_dir / "retrofit_rmse.csv")
    if table and len(frame):
        write_text_atomic(results_dir / "retrofit_table.md", table_markdown(frame))
        plot_deltas(frame, results_dir / "retrofit_deltas.png")
    return frame
