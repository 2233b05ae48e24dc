"""predict_many vs sequential predict on the benchmark's 18 cases -> results/bench_batch.csv."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import bench_batch, register

register("bench_batch")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="bench_batch")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        bench_batch.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
