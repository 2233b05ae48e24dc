"""The τ sweep -> results/tau_sweep.{csv,png} (`configs/tau_sweep.yaml`, `make tau-sweep`): matched
ΔRMSE% of each variant as the calibration constant c varies.

    python experiments/tau_sweep.py                                  # configs/tau_sweep.yaml
    python experiments/tau_sweep.py 'c_values=[0.001,0.01]' 'seeds=[0]' host=tiny_v2
    python experiments/tau_sweep.py plot_only=true                   # redraw the plot from tau_sweep.csv

Each (dataset, seed) is one `Case` whose units are every variant × c (tau rule
`{"mode": "calibrated", "c": c}`), so all c share one fit and one baseline. Datasets and variants
are config options by name, composed as Hydra composes them (search path included). Unit files
live under `<cache_dir>/tau_sweep/runs/`; `tau_sweep.csv` and `tau_sweep.png`
(`retrofit.results.tau_table`) are made of the units of this sweep's cases alone. A progress bar
per case over its units; per-unit detail in the run's log file.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import MISSING, DictConfig

from retrofit import runner
from retrofit.errors import RunnerError
from retrofit.io import write_csv
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import RunConfig, resolve

if TYPE_CHECKING:  # the cases and tables come with the functions below, not with the schema
    import pandas as pd

    from retrofit.runner.case import Case


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


def tau_cases(cfg: DictConfig, hydra_cfg: DictConfig) -> "list[Case]":
    """One `Case` per dataset × seed of `configs/tau_sweep.yaml`, validated (data loaded and
    split), duplicates rejected — all before any unit runs. `cfg`: the config composed onto
    `TauSweepConfig` (as `launch` checks it for `run`); `hydra_cfg`: the `hydra` node."""
    from retrofit.runner.case import Case, check_cases
    from retrofit.runner.sweep_config import (
        applicable,
        dataset_file,
        dataset_spec,
        group_option,
        run_settings,
        timing_rounds,
        unit_spec,
    )

    base_dir = Path(hydra_cfg.runtime.cwd)
    for key, example in (("datasets", "diabetes"), ("seeds", "0"), ("variants", "oa_only"), ("c_values", "0.001")):
        if not cfg[key]:
            raise RunnerError(f"{key}=[] leaves the tau sweep nothing to run; list one or more, e.g. {key}=[{example}]")
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
            dataset=dataset_spec(group_option(hydra_cfg, "dataset", name), dataset_file(hydra_cfg, name)),
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


def default_c(variants: list[str]) -> dict[str, float]:
    """Each built-in variant's own calibration constant c (its `tau` rule), by name."""
    from retrofit.variants import resolve_variant

    rules = {name: resolve_variant(name).tau for name in variants}
    return {name: rule.c for name, rule in rules.items() if rule is not None and rule.mode == "calibrated"}


def write_tau_results(results_dir: Path, cases: "list[Case]") -> "pd.DataFrame":
    """`tau_sweep.csv` and `tau_sweep.png` under `results_dir` from the units of `cases`."""
    from retrofit.results.tau_table import plot_tau, tau_table
    from retrofit.runner.finish import sweep_records

    table = tau_table(sweep_records(cases))
    write_csv(table, Path(results_dir) / "tau_sweep.csv")
    plot_tau(table, Path(results_dir) / "tau_sweep.png", default_c(sorted(table["variant"].unique())))
    return table


SCHEMA = TauSweepConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Run every unit of the sweep `job` describes (a progress bar per case), write the table and plot and
    report them; with `plot_only`, redraw the plot from the table in `results_dir` and run nothing."""
    import pandas as pd

    from retrofit.results.tau_table import plot_tau
    from retrofit.runner.case import run_case
    from retrofit.runner.finish import reusable

    settings = job.settings
    (table_path,) = job.outputs(Path(settings.results_dir) / "tau_sweep.csv")
    results_dir = table_path.parent
    if settings.plot_only:
        table = pd.read_csv(results_dir / "tau_sweep.csv")
        runner.say(f"wrote {plot_tau(table, results_dir / 'tau_sweep.png', default_c(list(settings.variants)))}")
        return
    with runner.collected_notices() as notices:
        cases = tau_cases(settings, job.hydra_cfg)
    reused = runner.reused(reusable(cases), sum(len(case.units) for case in cases))
    for case in cases:  # one progress bar per case over its units
        run_case(case)
    table = write_tau_results(results_dir, cases)
    written = [results_dir / "tau_sweep.csv", results_dir / "tau_sweep.png"]
    shown = table.assign(c=table["c"].map("{:g}".format)).round(4)
    log_file = str(Path(job.hydra_cfg.runtime.output_dir) / f"{job.hydra_cfg.job.name}.log")
    runner.print_run_summary(shown.to_markdown(index=False), written, log_file, notices, reused)


if __name__ == "__main__":
    launch("tau_sweep")
