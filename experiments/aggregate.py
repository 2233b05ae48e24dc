"""Aggregate the unit files under <results_dir>/runs/ (a separate step, run after the sweep):

    python experiments/aggregate.py [results_dir=<dir>]
    -> retrofit_rmse.csv, retrofit_table.md, retrofit_deltas.png in <results_dir>
"""

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.runner.aggregate import aggregate
from retrofit.errors import exit_on_user_error
from retrofit.runner.config import resolve
from retrofit.errors import RunnerError

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    results_dir = resolve(Path(HydraConfig.get().runtime.cwd), cfg.results_dir)
    with exit_on_user_error():
        frame = aggregate(results_dir)
        if frame.empty:
            raise RunnerError(f"no unit results under {results_dir / 'runs'}; run the sweep first (make retrofit)")
    log.info("%d rows -> %s/retrofit_rmse.csv, retrofit_table.md, retrofit_deltas.png", len(frame), results_dir)


if __name__ == "__main__":
    main()
