"""Shapley values: batched closed removal vs shapiq's refit per coalition vs zeroing -> results/removal_bench.*"""

import logging

import hydra
from omegaconf import DictConfig, OmegaConf

from retrofit.errors import exit_on_user_error
from retrofit.removal.bench import run


@hydra.main(version_base="1.3", config_path="../configs", config_name="explain_bench")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.INFO)
    with exit_on_user_error():
        settings = OmegaConf.to_container(cfg, resolve=True)
        settings.pop("benchmark_datasets")  # the shared list `datasets` was read from
        table, _ = run(OmegaConf.create(settings))
    print(table.to_string(index=False, float_format="%.3g"))


if __name__ == "__main__":
    main()
