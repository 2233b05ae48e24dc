"""The τ sweep: matched ΔRMSE% of each variant as the calibration constant c varies.

Each (dataset, seed) is one `Case` whose units are every variant × c (tau rule
`{"mode": "calibrated", "c": c}`), so all c share one fit and one baseline. Datasets and variants
are config options by name, composed as Hydra composes them (search path included). Unit files
live under `<cache_dir>/tau_sweep/runs/` (a local cache); `tau_sweep.csv` has one row per host ×
variant × c with the mean ΔRMSE% over the cases and its 95% CI (two-level bootstrap,
`retrofit.runner.bootstrap`); `tau_sweep.png` plots it.
"""

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from retrofit.errors import RunnerError
from retrofit.io import write_png
from retrofit.runner.aggregate import bootstrap_ci, write_csv
from retrofit.runner.case import Case, check_cases
from retrofit.runner.config import (
    applicable,
    dataset_spec,
    group_option,
    resolve,
    run_settings,
    timing_rounds,
    unit_spec,
)
from retrofit.runner.units import UnitStore


def tau_cases(cfg: DictConfig, hydra_cfg: DictConfig) -> list[Case]:
    """One `Case` per dataset × seed of `configs/tau_sweep.yaml`, validated (data loaded and
    split), duplicates rejected — all before any unit runs. `hydra_cfg`: the `hydra` node."""
    base_dir = Path(hydra_cfg.runtime.cwd)
    settings = run_settings(cfg, base_dir)
    nodes = {name: group_option(hydra_cfg, "variant", name) for name in cfg.variants}
    units = tuple(
        unit_spec(name, node, {"tau": {"mode": "calibrated", "c": float(c)}})
        for c in cfg.c_values
        for name, node in nodes.items()
    )
    units = applicable(units, settings["host_path"], settings["host"])
    runs_dir = resolve(base_dir, cfg.cache_dir) / "tau_sweep" / "runs"
    cases = [
        Case(
            dataset=dataset_spec(group_option(hydra_cfg, "dataset", name)),
            seed=seed,
            units=units,
            runs_dir=runs_dir,
            timing_rounds=timing_rounds(cfg, seed),
            **settings,
        )
        for name in cfg.datasets
        for seed in cfg.seeds
    ]
    check_cases(cases)
    return cases


def tau_table(runs_dir: Path) -> pd.DataFrame:
    """Mean ΔRMSE% (and its 95% CI, datasets then seeds resampled) per host × variant × c."""
    rows = pd.DataFrame(UnitStore(runs_dir).rows())
    if rows.empty:
        raise RunnerError(f"no tau-sweep results under {runs_dir}; run `make tau-sweep` first")
    rows["c"] = rows["hparams"].map(lambda h: h["tau.c"])
    table = []
    for (host, variant, c), group in rows.groupby(["host", "variant", "c"]):
        low, high = bootstrap_ci(group)
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
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state

    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
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
    return path


def write_tau_results(results_dir: Path, cache_dir: Path) -> pd.DataFrame:
    """`tau_sweep.csv` and `tau_sweep.png` under `results_dir` from `<cache_dir>/tau_sweep/runs/`."""
    table = tau_table(cache_dir / "tau_sweep" / "runs")
    write_csv(table, results_dir / "tau_sweep.csv")
    plot_tau(table, results_dir / "tau_sweep.png")
    return table
