"""The stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv."""

import logging
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from retrofit.errors import exit_on_user_error
from retrofit.fitting import fit_cases
from retrofit.hosts import get_path
from retrofit.measure.padding import padding_effect
from retrofit.runner.config import dataset_specs
from retrofit.runner.guard import check_record_outputs


@hydra.main(version_base="1.3", config_path="../configs", config_name="padding_demo")
def main(cfg: DictConfig) -> None:
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    hydra_cfg = HydraConfig.get()
    output = Path(to_absolute_path(cfg.output))
    with exit_on_user_error():
        check_record_outputs([output], hydra_cfg.overrides.task)
    datasets = dataset_specs(hydra_cfg, cfg.datasets)
    base_dir = Path(hydra_cfg.runtime.cwd)
    cases = fit_cases(get_path(cfg.host), datasets, cfg.seeds, base_dir=base_dir, n_estimators=cfg.n_estimators)
    table = padding_effect(cfg.host, cases, list(cfg.variants), max_padding=cfg.max_padding)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(table.groupby(["variant", "dataset"], sort=False)["rel_delta_pred"].max().to_string(float_format="%.3g"))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
