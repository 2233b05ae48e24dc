"""The stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv (`make padding-demo`;
`configs/padding_demo.yaml`, `benchmarks.padding`)."""

import logging
from dataclasses import dataclass

from omegaconf import MISSING, DictConfig

from benchmarks.fitted_cases import CasesConfig, fitted_cases
from retrofit.jobs import launch
from retrofit.jobs.start import start


@dataclass
class PaddingDemoConfig(CasesConfig):
    """The schema of `configs/padding_demo.yaml` (each key's role is written there)."""

    variants: list[str] = MISSING
    max_padding: float = MISSING
    output: str = MISSING


CONFIG = "padding_demo"
"""Its root config, `configs/padding_demo.yaml`."""
SCHEMA = PaddingDemoConfig


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Measure how padding moves each variant's predictions on every case of `cfg`; write and print it."""
    from benchmarks.padding import padding_effect

    job = start(cfg, hydra_cfg, PaddingDemoConfig, "configs/padding_demo.yaml")
    settings: PaddingDemoConfig = job.settings
    logging.getLogger("retrofit").setLevel(logging.WARNING)
    (output,) = job.outputs(settings.output)
    cases = fitted_cases(job)
    table = padding_effect(settings.host, cases, settings.variants, max_padding=settings.max_padding)
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    print(table.to_string(index=False, float_format="%.3g"))
    print(table.groupby(["variant", "dataset"], sort=False)["rel_delta_pred"].max().to_string(float_format="%.3g"))
    print(f"wrote {output}")


if __name__ == "__main__":
    launch("padding_demo")
