"""Shapley values of a dataset's rows by removal in an o_closed host -> `<results_dir>/<dataset>_explanation.{csv,png}`
(`configs/explain.yaml`; `retrofit.explanation`).

    python experiments/explain.py dataset=csv dataset.path=data/houses.csv dataset.target=price 'rows=[0,5,9]'
"""

import logging
from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING, OmegaConf

from retrofit.explanation.settings import ExplainSettings
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import HostConfig


@dataclass
class ExplainConfig(ExplainSettings):
    """The schema of `configs/explain.yaml` (each key's role is written there): the explanation's
    knobs (`retrofit.explanation.ExplainSettings`, whose defaults `retrofit.explain` shares), the
    dataset (checked by `retrofit.data.DatasetSpec`), the host and where the files go."""

    dataset: dict[str, Any] = MISSING
    host: HostConfig = MISSING
    results_dir: str = MISSING


SCHEMA = ExplainConfig
AS_OBJECT = False


def run(job: JobStart) -> None:
    """Explain `rows` of the dataset; write the CSV and the figure; print where they are."""
    from retrofit.data import load_table
    from retrofit.explanation import explain_table
    from retrofit.explanation.files import explanation_files, write_explanation
    from retrofit.runner.sweep_config import dataset_file, dataset_spec, host_path

    logging.getLogger("retrofit").setLevel(logging.WARNING)  # the console shows the plan, the estimate, the bar
    settings, base_dir = job.settings, job.base_dir
    spec = dataset_spec(settings.dataset, dataset_file(job.hydra_cfg, job.hydra_cfg.runtime.choices.get("dataset")))
    files = job.outputs(*explanation_files(settings.results_dir, spec.name))
    host = host_path(settings, base_dir)
    knobs = ExplainSettings.of(OmegaConf.to_container(settings, resolve=True))
    frame = explain_table(load_table(spec, base_dir), host, knobs, say=print, progress=True)
    write_explanation(frame, files, spec.name, host, knobs)
    print("\n".join(f"wrote {path}" for path in files))


if __name__ == "__main__":
    launch("explain")
