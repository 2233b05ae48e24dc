"""The retrofit sweep's entry point: one case (host × dataset × seed, every selected variant) per job.

    python experiments/sweep.py dataset=<name> seed=<n> results_dir=<dir>
    python experiments/sweep.py -m dataset=concrete variant=oa_only,full_o   # a grid: one baseline per case
    python experiments/sweep.py -m +experiment=paper_table      # the default grid (make retrofit)
    python experiments/sweep.py -v ...                          # per-unit detail on the console too

Configs: configs/config.yaml. A single run adds its case's rows to <results_dir>/retrofit_rmse.csv
(rows of other units already there are kept; its own replace theirs); a sweep (-m) writes exactly
its jobs' rows there at its end (`retrofit.runner.hydra_callbacks`). With reference=<csv>, either
checks that its rows reproduce that file. Each job shows a progress bar over its units; both end with the
headline table and the files written; bad input exits non-zero with `error: <what to fix>`.
"""

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import register
from retrofit.runner import console
from retrofit.runner.aggregate import aggregate, headline, noise_floors, outputs
from retrofit.runner.case import reusable, run_case
from retrofit.runner.collect import case_records, record_job
from retrofit.runner.compare import verify
from retrofit.runner.config import case_from_hydra
from retrofit.runner.record import frame_of
from retrofit.runner.schema import reference_of, results_dir_of

register("config")  # this entry point's schema, before Hydra composes

VERBOSE = ("-v", "--verbose")
"""Flags read as `log_level=INFO` (Hydra itself takes only overrides)."""


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    base_dir = Path(hydra_cfg.runtime.cwd)
    with exit_on_user_error():
        if hydra_cfg.mode == RunMode.MULTIRUN:  # the callback checks before and aggregates after
            run_case(case_from_hydra(cfg, hydra_cfg))
            return
        output_dir = Path(hydra_cfg.runtime.output_dir)
        with console.collected_notices() as notices:
            case = case_from_hydra(cfg, hydra_cfg)
            reference = reference_of(cfg, base_dir)  # read before the run writes anything
            reused = reusable([case])
            rows = run_case(case)
            console.say(console.reused(reused, len(rows)))
            record_job(cfg, hydra_cfg, case)  # which units this run computed, for experiments/aggregate.py
        results_dir = results_dir_of(cfg, hydra_cfg)
        records = case_records(case, rows)
        frame = aggregate(results_dir, records, keep=True)
        written = [results_dir / name for name in outputs(frame)]
        console.report(headline(frame, noise_floors()), written, str(output_dir / f"{hydra_cfg.job.name}.log"), notices)
        if reference is not None:  # this run's own rows against the reference
            verify(results_dir, reference, frame_of(records))


if __name__ == "__main__":
    sys.argv = ["log_level=INFO" if arg in VERBOSE else arg for arg in sys.argv]
    os.environ[console.FULL_ERROR] = "1"  # Hydra re-raises; entry_errors says it in one line
    with console.entry_errors():
        main()
