"""The stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv
(`configs/padding_demo.yaml`)."""

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import MISSING, DictConfig, OmegaConf

from retrofit.fitting import fit_cases
from retrofit.hosts import get_path
from retrofit.measure.padding import padding_effect
from retrofit.runner.config import dataset_specs, job_config, resolve
from retrofit.runner.guard import check_record_outputs


@dataclass
class PaddingDemoConfig:
    """The schema of `configs/padding_demo.yaml` (each key's role is written there)."""

    benchmark_datasets: str = MISSING
    host: str = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    n_estimators: int = MISSING
    variants: list[str] = MISSING
    max_padding: float = MISSING
    output: str = MISSING


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Measure how padding moves each variant's predictions on every case of `cfg`; write and print it."""
    settings: PaddingDemoConfig = OmegaConf.to_object(job_config(cfg, PaddingDemoConfig, "configs/padding_demo.yaml"))
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    base_dir = Path(hydra_cfg.runtime.cwd)
    output = resolve(base_dir, settings.output)
    check_record_outputs([output], hydra_cfg.overrides.task)
    datasets = dataset_specs(hydra_cfg, settings.datasets)
    cases = fit_cases(
        get_path(settings.host), datasets, settings.seeds, base_dir=base_dir, n_estimators=settings.n_estimators
    )
    table = padding_effect(settings.host, cases, settings.variants, max_padding=settings.max_padding)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(table.groupby(["variant", "dataset"], sort=False)["rel_delta_pred"].max().to_string(float_format="%.3g"))
    print(f"wrote {output}")
