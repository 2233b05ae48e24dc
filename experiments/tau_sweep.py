"""ΔRMSE against the tau calibration constant c (make tau-sweep) -> results/tau_sweep.{csv,png}.

python experiments/tau_sweep.py                                  # configs/tau_sweep.yaml
python experiments/tau_sweep.py 'c_values=[0.001,0.01]' 'seeds=[0]' host=tiny_v2
python experiments/tau_sweep.py plot_only=true                   # redraw the plot from tau_sweep.csv

One progress bar over the sweep's units; per-unit detail in the run's log file.
"""

from pathlib import Path

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import retrofit.jobs  # noqa: F401  (registers the root configs' schemas)
from retrofit.errors import exit_on_user_error
from retrofit.runner import console
from retrofit.runner.case import run_case
from retrofit.runner.config import resolve
from retrofit.runner.guard import check_record_outputs
from retrofit.runner.tau_sweep import default_c, plot_tau, tau_cases, write_tau_results


@hydra.main(version_base="1.3", config_path="../configs", config_name="tau_sweep")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    results_dir = resolve(Path(hydra_cfg.runtime.cwd), cfg.results_dir)
    with exit_on_user_error():
        check_record_outputs([results_dir / "tau_sweep.csv"], hydra_cfg.overrides.task)
        if cfg.plot_only:
            table = pd.read_csv(results_dir / "tau_sweep.csv")
            console.say(f"wrote {plot_tau(table, results_dir / 'tau_sweep.png', default_c(list(cfg.variants)))}")
            return
        with console.collected_notices() as notices:
            cases = tau_cases(cfg, hydra_cfg)
        markers = Path(hydra_cfg.runtime.output_dir) / console.MARKERS
        with console.UnitProgress(cases, markers):
            for case in cases:
                with console.job_marker(markers, case):
                    run_case(case)
        table = write_tau_results(results_dir, cases)
        written = [results_dir / "tau_sweep.csv", results_dir / "tau_sweep.png"]
        shown = table.assign(c=table["c"].map("{:g}".format)).round(4)
        log_file = str(Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log")
        console.report(shown.to_markdown(index=False), written, log_file, notices)


if __name__ == "__main__":
    main()
