"""Removal explanations: closed removal vs a refit per coalition vs zeroing -> results/removal_{bench,stages}.*"""

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.errors import exit_on_user_error
from retrofit.removal.bench import run
from retrofit.runner.config import dataset_specs
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="explain_bench")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.INFO)
    with exit_on_user_error():
        settings = OmegaConf.to_container(cfg, resolve=True)
        settings.pop("benchmark_datasets")  # the shared list `datasets` was read from
        hydra_cfg = HydraConfig.get()
        base_dir = Path(hydra_cfg.runtime.cwd)
        outputs = [
            base_dir / settings[key] for key in ("output", "plot", "example_plot", "stages_output") if settings.get(key)
        ]
        check_record_outputs(outputs, hydra_cfg.overrides.task)
        datasets = dataset_specs(hydra_cfg, settings["datasets"])
        table, _ = run(OmegaConf.create(settings), datasets, base_dir)
    print(table.to_string(index=False, float_format="%.3g"))


if __name__ == "__main__":
    main()
