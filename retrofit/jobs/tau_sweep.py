"""ΔRMSE against the tau calibration constant c -> results/tau_sweep.{csv,png}
(`configs/tau_sweep.yaml`, `retrofit.runner.tau_sweep`)."""

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from retrofit.jobs.start import start
from retrofit.runner import console
from retrofit.runner.case import reusable, run_case
from retrofit.runner.tau_sweep import TauSweepConfig, default_c, plot_tau, tau_cases, write_tau_results


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Run every unit of the sweep `cfg` describes (a progress bar per case), write the table and plot and
    report them; with `plot_only`, redraw the plot from the table in `results_dir` and run nothing."""
    job = start(cfg, hydra_cfg, TauSweepConfig, "configs/tau_sweep.yaml", as_object=False)
    settings = job.settings
    (table_path,) = job.outputs(Path(settings.results_dir) / "tau_sweep.csv")
    results_dir = table_path.parent
    if settings.plot_only:
        table = pd.read_csv(results_dir / "tau_sweep.csv")
        console.say(f"wrote {plot_tau(table, results_dir / 'tau_sweep.png', default_c(list(settings.variants)))}")
        return
    with console.collected_notices() as notices:
        cases = tau_cases(cfg, hydra_cfg)
    reused = reusable(cases)
    for case in cases:  # one progress bar per case over its units
        run_case(case)
    console.say(console.reused(reused, sum(len(case.units) for case in cases)))
    table = write_tau_results(results_dir, cases)
    written = [results_dir / "tau_sweep.csv", results_dir / "tau_sweep.png"]
    shown = table.assign(c=table["c"].map("{:g}".format)).round(4)
    log_file = str(Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log")
    console.report(shown.to_markdown(index=False), written, log_file, notices)
