"""Benchmark: OAttention vs plain SDPA vs naive, one thread; prints ratios (`make bench`)."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import bench, register

register("bench")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="bench")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        bench.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
