"""The τ sweep: matched ΔRMSE% of each variant as the calibration constant c varies.

Each (dataset, seed) is one `Case` whose units are every variant × c (tau rule
`{"mode": "calibrated", "c": c}`), so all c share one fit and one baseline. Datasets and variants
are config options by name, composed as Hydra composes them (search path included). Unit files
live under `<cache_dir>/tau_sweep/runs/` (a local cache); `tau_sweep.csv` has one row per host ×
variant × c with the mean ΔRMSE% over the cases of this sweep (its own units, whatever else the
cache holds) and its 95% CI (two-level bootstrap, `retrofit.runner.bootstrap`); `tau_sweep.png`
plots it, one panel per host, with each variant's default c marked.
"""

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from omegaconf import MISSING, DictConfig

from retrofit.errors import RunnerError
from retrofit.io import write_csv, write_png
from retrofit.runner.bootstrap import frame_ci
from retrofit.runner.case import Case, check_cases
from retrofit.runner.collect import sweep_records
from retrofit.runner.compose import group_option
from retrofit.runner.config import applicable, dataset_spec, run_settings, timing_rounds, unit_spec
from retrofit.runner.record import frame_of
from retrofit.runner.schema import RunConfig, job_config, resolve
from retrofit.variants import resolve_variant


@dataclass
class TauSweepConfig(RunConfig):
    """The schema of `configs/tau_sweep.yaml` (each key's role is written there): the run settings
    of `RunConfig`, and the datasets, seeds, variants and c values the sweep crosses."""

    benchmark_datasets: str = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    variants: list[str] = MISSING
    c_values: list[float] = MISSING
    plot_only: bool = False


def tau_cases(cfg: DictConfig, hydra_cfg: DictConfig) -> list[Case]:
    """One `Case` per dataset × seed of `configs/tau_sweep.yaml`, validated (data loaded and
    split), duplicates rejected — all before any unit runs. `hydra_cfg`: the `hydra` node."""
    base_dir = Path(hydra_cfg.runtime.cwd)
    cfg = job_config(cfg, TauSweepConfig, "configs/tau_sweep.yaml")
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


def tau_table(cases: list[Case]) -> pd.DataFrame:
    """Mean ΔRMSE% (and its 95% CI, datasets then seeds resampled) per host × variant × c over the
    units of `cases`; RunnerError if one has no current result."""
    rows = frame_of(sweep_records(cases))
    rows = rows[rows["variant"] != "baseline"]
    if rows.empty:
        raise RunnerError("the tau sweep has no variant units; list variants=[...] in configs/tau_sweep.yaml")
    table = []
    for (host, variant, c), group in rows.groupby(["host", "variant", "tau_c"]):
        low, high = frame_ci(group)
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


def default_c(variants: list[str]) -> dict[str, float]:
    """Each built-in variant's own calibration constant c (its `tau` rule), by name."""
    rules = {name: resolve_variant(name).tau for name in variants}
    return {name: rule.c for name, rule in rules.items() if rule is not None and rule.mode == "calibrated"}


def plot_tau(table: pd.DataFrame, path: Path, defaults: dict[str, float]) -> Path:
    """Mean ΔRMSE% against c (log axis; symlog ΔRMSE axis) per variant with its 95% CI band, one
    panel per host on its own scale; a dotted line at each variant's default c (`defaults`)."""
    from matplotlib.figure import Figure  # no pyplot: no backend switch, no global figure state

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
        ax.set_yscale("symlog", linthresh=0.1)  # linear within ±0.1 %, logarithmic beyond
        ax.set_xlabel("calibration constant c  (tau = c · median ||h||²)")
        ax.set_ylabel("mean ΔRMSE vs baseline (%)")
        cases = int(table.loc[table["host"] == host, "cases"].max())
        ax.set_title(f"{host} ({cases} cases, bootstrap 95% CI)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return write_png(fig, path)


def write_tau_results(results_dir: Path, cases: list[Case]) -> pd.DataFrame:
    """`tau_sweep.csv` and `tau_sweep.png` under `results_dir` from the units of `cases`."""
    table = tau_table(cases)
    write_csv(table, Path(results_dir) / "tau_sweep.csv")
    plot_tau(table, Path(results_dir) / "tau_sweep.png", default_c(sorted(table["variant"].unique())))
    return table
