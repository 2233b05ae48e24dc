"""The τ sweep: matched ΔRMSE% of each variant as the calibration constant c varies.

Each (dataset, seed) is one `Case` whose units are every variant × c (tau rule
`{"mode": "calibrated", "c": c}`), so all c share one fit and one baseline. Unit files live
under `<results_dir>/tau_sweep/runs/`; `tau_sweep.csv` has one row per host × variant × c with
the mean ΔRMSE% over the cases and its bootstrap 95% CI; `tau_sweep.png` plots it.
"""

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from retrofit.runner.aggregate import bootstrap_ci, write_csv
from retrofit.runner.case import Case, check_cases
from retrofit.runner.config import dataset_spec, resolve, run_settings, unit_specs
from retrofit.errors import RunnerError
from retrofit.io import write_png
from retrofit.runner.units import UnitStore


def tau_cases(cfg: DictConfig, base_dir: Path) -> list[Case]:
    """One `Case` per dataset × seed of `configs/tau_sweep.yaml`, validated (data loaded and
    split), duplicates rejected — all before any unit runs."""
    settings = run_settings(cfg, base_dir)
    units = tuple(
        unit
        for c in cfg.c_values
        for unit in unit_specs(list(cfg.variants), {"tau": {"mode": "calibrated", "c": float(c)}})
    )
    results_dir = resolve(base_dir, cfg.results_dir) / "tau_sweep"
    cases = [
        Case(dataset=dataset_spec(dataset), seed=int(seed), units=units, results_dir=results_dir, **settings)
        for dataset in cfg.datasets.values()
        for seed in cfg.seeds
    ]
    check_cases(cases)
    return cases


def tau_table(runs_dir: Path) -> pd.DataFrame:
    """Mean ΔRMSE% (and bootstrap 95% CI over cases) per host × variant × c."""
    rows = pd.DataFrame(UnitStore(runs_dir).rows())
    if rows.empty:
        raise RunnerError(f"no tau-sweep results under {runs_dir}; run `make tau-sweep` first")
    rows["c"] = rows["hparams"].map(lambda h: h["tau.c"])
    table = []
    for (host, variant, c), group in rows.groupby(["host", "variant", "c"]):
        low, high = bootstrap_ci(group["delta_rmse_pct"].to_numpy())
        table.append(
            {
                "host": host,
                "variant": variant,
                "c": c,
                "cases": len(group),
                "mean_delta_rmse_pct": group["delta_rmse_pct"].mean(),
                "ci_low": low,
                "ci_high": high,
                "max_abs_delta_rmse_pct": group["delta_rmse_pct"].abs().max(),
            }
        )
    return pd.DataFrame(table)


def plot_tau(table: pd.DataFrame, path: Path) -> Path:
    """Mean ΔRMSE% against c (log axis; symlog ΔRMSE axis) per host × variant, with its 95% CI band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (host, variant), group in table.groupby(["host", "variant"]):
        group = group.sort_values("c")
        ax.plot(group["c"], group["mean_delta_rmse_pct"], marker="o", label=f"{host} {variant}")
        ax.fill_between(group["c"], group["ci_low"], group["ci_high"], alpha=0.2)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.1)  # linear within ±0.1 %, logarithmic beyond
    ax.set_xlabel("calibration constant c  (tau = c · median ||h||²)")
    ax.set_ylabel("mean ΔRMSE vs baseline (%)")
    ax.set_title(f"Retrofit cost against c ({int(table['cases'].max())} cases, bootstrap 95% CI)")
    ax.legend()
    fig.tight_layout()
    write_png(fig, path)
    plt.close(fig)
    return path


def write_tau_results(results_dir: Path) -> pd.DataFrame:
    """`tau_sweep.csv` and `tau_sweep.png` under `results_dir` from its `tau_sweep/runs/`."""
    table = tau_table(results_dir / "tau_sweep" / "runs")
    write_csv(table, results_dir / "tau_sweep.csv")
    plot_tau(table, results_dir / "tau_sweep.png")
    return table
