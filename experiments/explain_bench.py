"""Removal explanations: closed removal vs a refit per coalition vs zeroing -> results/removal_{bench,stages}.*"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.jobs import explain_bench, register

register("explain_bench")  # this entry point's schema, before Hydra composes


@hydra.main(version_base="1.3", config_path="../configs", config_name="explain_bench")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        explain_bench.run(cfg, HydraConfig.get())


if __name__ == "__main__":
    main()
