"""OAttention exactness vs the float64 reference -> results/exactness.csv (`make exactness`).

A progress bar over the (shape, score_std, dtype) grid; `exactness_table` draws each grid point's
inputs from `seed` afresh, so measuring one point at a time gives the same rows as the whole grid.
"""

import itertools
from pathlib import Path

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig
from tqdm.auto import tqdm

from retrofit.errors import exit_on_user_error
from retrofit.io import write_atomic
from retrofit.measure.exactness import Shape, exactness_table
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="exactness")
def main(cfg: DictConfig) -> None:
    path = Path(to_absolute_path(cfg.output_csv))
    with exit_on_user_error():
        check_record_outputs([path], HydraConfig.get().overrides.task)
    grid = list(itertools.product([Shape(**shape) for shape in cfg.shapes], cfg.score_stds, cfg.dtypes))
    parts = []
    with tqdm(grid, desc="exactness", unit="input") as bar:
        for shape, score_std, dtype in bar:
            bar.set_description_str(
                f"exactness B={shape.B} H={shape.H} Q={shape.Q} K={shape.K} std={score_std:g} {dtype}"
            )
            parts.append(
                exactness_table(
                    shapes=[shape],
                    score_stds=[score_std],
                    dtypes=[dtype],
                    null_fraction=cfg.null_fraction,
                    insert_fraction=cfg.insert_fraction,
                    seed=cfg.seed,
                )
            )
    table = pd.concat(parts, ignore_index=True)
    write_atomic(path, lambda tmp: table.to_csv(tmp, index=False, float_format="%.6g"))
    print(table.to_string(index=False, float_format="%.3g"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
