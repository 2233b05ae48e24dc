"""Aggregate every complete unit in the local store (e.g. after an interrupted or concurrent sweep):

    python experiments/aggregate.py [cache_dir=<dir>] [results_dir=<dir>] [reference=<csv>]
    -> retrofit_rmse.csv, retrofit_table.md, retrofit_deltas.png in <results_dir>
       (with reference: reproduction.txt, non-zero exit unless every row reproduces that CSV as
       committed, or as it was before this step outside git)

A finished sweep (-m) writes the same files from exactly its own units; this reads all of
<cache_dir>/runs, whatever else ran there.
"""

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.runner.aggregate import aggregate
from retrofit.runner.config import output_dir, reference_of
from retrofit.runner.guard import check_results_dir, require_rows
from retrofit.runner.reproduce import verify
from retrofit.runner.units import UnitStore

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    base_dir = Path(HydraConfig.get().runtime.cwd)
    with exit_on_user_error():
        results_dir = check_results_dir(output_dir(cfg, base_dir, "results_dir"), record=False, whole_sweep=False)
        runs_dir = output_dir(cfg, base_dir, "cache_dir") / "runs"
        reference = reference_of(cfg, base_dir)
        frame = aggregate(results_dir, require_rows(UnitStore(runs_dir).rows(), runs_dir))
        log.info("%d rows -> %s/retrofit_rmse.csv, retrofit_table.md, retrofit_deltas.png", len(frame), results_dir)
        if reference is not None:
            verify(results_dir, reference)


if __name__ == "__main__":
    main()
