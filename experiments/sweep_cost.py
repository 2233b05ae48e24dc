"""Where the sweep's time goes: CPU seconds per phase of the paper table's cases -> results/sweep_cost.csv.

    python experiments/sweep_cost.py                      # configs/sweep_cost.yaml (make sweep-cost)
    python experiments/sweep_cost.py 'datasets=[wage]' 'seeds=[1]' repeats=1 output=outputs/cost.csv

Each case is the one `make retrofit` runs for that host × dataset × seed (the root config
`configs/sweep.yaml` with `+experiment=paper_table`: every variant, the decomposition arms, the
timing rounds on seed 0), run afresh into `cache_dir` (`benchmarks.phase_costs`).
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import MISSING, open_dict

from retrofit.io import write_atomic
from retrofit.jobs import launch, register
from retrofit.jobs.start import JobStart

if TYPE_CHECKING:  # the cases come with `sweep_cases`, not with the schema
    from retrofit.runner.case import Case


@dataclass
class SweepCostConfig:
    """The schema of `configs/sweep_cost.yaml` (each key's role is written there)."""

    benchmark_datasets: str = MISSING
    hosts: list[str] = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    repeats: int = MISSING
    cache_dir: str = MISSING
    output: str = MISSING


SCHEMA = SweepCostConfig


def sweep_cases(settings: SweepCostConfig, base_dir: Path) -> "list[Case]":
    """The paper table's case of every host × dataset × seed of `settings`, writing into `cache_dir`."""
    from retrofit.runner.case import check_cases
    from retrofit.runner.sweep_config import case_from_hydra

    register("sweep")  # each case is composed from configs/sweep.yaml, checked by the sweep's schema
    loader = GlobalHydra.instance().config_loader()
    cases = []
    for host in settings.hosts:
        for dataset in settings.datasets:
            for seed in settings.seeds:
                overrides = ["+experiment=paper_table", f"host={host}", f"dataset={dataset}", f"seed={seed}"]
                cfg = loader.load_configuration("sweep", [*overrides, f"cache_dir={settings.cache_dir}"], RunMode.RUN)
                with open_dict(cfg):
                    cfg.hydra.runtime.cwd = str(base_dir)
                cases.append(case_from_hydra(cfg, cfg.hydra))
    check_cases(cases)
    return cases


def run(job: JobStart) -> None:
    """Run every case of `job` `repeats` times with its phases timed; write and print the table."""
    import pandas as pd

    from benchmarks.phase_costs import cost_table, import_seconds

    settings: SweepCostConfig = job.settings
    (output,) = job.outputs(settings.output)
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    table = cost_table(sweep_cases(settings, job.base_dir), settings.repeats)
    table = pd.concat([table, pd.DataFrame([{"phase": "import", "cpu_s": import_seconds()}])], ignore_index=True)
    table = table.astype({"seed": "Int64", "timing_rounds": "Int64", "repeat": "Int64"})
    write_atomic(output, lambda tmp: table.to_csv(tmp, index=False, float_format="%.4g"))
    per_case = table.groupby(["host", "dataset", "seed", "shared_stages", "phase"], dropna=False)["cpu_s"].median()
    print(per_case.unstack("phase").to_string(float_format="%.2f"))
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("sweep_cost")
