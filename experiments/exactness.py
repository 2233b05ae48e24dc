"""OAttention exactness vs the float64 reference -> results/exactness.csv (`make exactness`).

A progress bar over the (shape, score_std, dtype) grid; `exactness_table` draws each grid point's
inputs from `seed` afresh, so measuring one point at a time gives the same rows as the whole grid.
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import exactness, register

register("exactness")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="exactness")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        exactness.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
