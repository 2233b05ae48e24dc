"""Shapley values of a dataset's rows by removal in an o_closed host -> `<results_dir>/<dataset>_explanation.{csv,png}`
(`configs/explain.yaml`; `retrofit.explanation`).

    python experiments/explain.py dataset=csv dataset.path=data/houses.csv dataset.target=price 'rows=[0,5,9]'
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig

from retrofit.data.csv_file import check_csv_command
from retrofit.jobs import launch
from retrofit.jobs.start import start
from retrofit.runner import HostConfig, command_overrides


@dataclass
class ExplainConfig:
    """The schema of `configs/explain.yaml` (each key's role is written there); `dataset` is checked
    by `retrofit.data.DatasetSpec`."""

    dataset: dict[str, Any] = MISSING
    host: HostConfig = MISSING
    rows: list[int] = MISSING
    order: int = MISSING
    budget: int | None = None
    max_seconds: float = MISSING
    n_estimators: int = MISSING
    seed: int = MISSING
    device: str = MISSING
    threads: int = MISSING
    results_dir: str = MISSING


SCHEMA = ExplainConfig


def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Explain `rows` of the dataset; write the CSV and the figure; print where they are."""
    check_csv_command(cfg.dataset, command_overrides(hydra_cfg), Path(hydra_cfg.runtime.cwd))  # before any model loads
    from retrofit.data import load_table
    from retrofit.explanation import explain_table
    from retrofit.io import write_csv
    from retrofit.results.explanation_plot import plot_explanation
    from retrofit.runner.sweep_config import dataset_file, dataset_spec, host_path

    job = start(cfg, hydra_cfg, ExplainConfig, "configs/explain.yaml", as_object=False)
    logging.getLogger("retrofit").setLevel(logging.WARNING)  # the console shows the plan, the estimate, the bar
    settings, base_dir = job.settings, job.base_dir
    spec = dataset_spec(settings.dataset, dataset_file(hydra_cfg, hydra_cfg.runtime.choices.get("dataset")))
    table_csv, figure = job.outputs(
        *(Path(settings.results_dir) / f"{spec.name}_explanation.{x}" for x in ("csv", "png"))
    )
    host = host_path(settings, base_dir)
    frame = explain_table(
        load_table(spec, base_dir),
        rows=list(settings.rows),
        order=settings.order,
        budget=settings.budget,
        max_seconds=settings.max_seconds,
        host_path=host,
        n_estimators=settings.n_estimators,
        seed=settings.seed,
        device=settings.device,
        threads=settings.threads,
        say=print,
        progress=True,
    )
    table_csv.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, table_csv)
    how = "exact" if settings.budget is None else f"budget {settings.budget}"
    plot_explanation(frame, figure, f"{spec.name} on {host.stem}: order {settings.order}, {how}")
    print(f"wrote {table_csv}\nwrote {figure}")


if __name__ == "__main__":
    launch("explain")
