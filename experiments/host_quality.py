"""Host quality bar, each host's RMSE against the mean, ridge and a random forest:
`<results_dir>/host_quality.csv` (per case), `host_quality_summary.csv`, `host_extrapolation.csv`
(`benchmarks.host_baselines.extrapolation_probe`), the model cards and a printed summary
(`make host-quality`, `configs/host_quality.yaml`); with `--config-name preset_selection`
(`make preset-selection`, `configs/preset_selection.yaml`) the same on the preset-selection
datasets, no model cards."""

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.runner import resolve

log = logging.getLogger(__name__)


@dataclass
class HostQualityConfig:
    """The schema of `configs/host_quality.yaml` and `configs/preset_selection.yaml` (each key's
    role is written there; `results_dir` and `cache_dir` come from `configs/paths/`)."""

    results_dir: str = MISSING
    cache_dir: str | None = MISSING
    benchmark_datasets: str = MISSING
    hosts: list[str] = MISSING
    datasets: list[str] = MISSING
    seeds: list[int] = MISSING
    presets: list[str] = MISSING
    n_estimators: int = MISSING
    device: str = MISSING
    cards_dir: str | None = MISSING
    suite_summary: str | None = MISSING


SCHEMA = HostQualityConfig


def run(job: JobStart) -> None:
    """Score every host and preset of `job` against the baselines on every case; write the tables
    (and the model cards when `cards_dir` is set) and print the summary and the extrapolation probe."""
    import pandas as pd

    from benchmarks.host_baselines import extrapolation_probe, host_regressor, per_dataset_ratios, score_case, summarise
    from retrofit.fitting import load_split
    from retrofit.hosts import get_path
    from retrofit.hosts.card import render_card
    from retrofit.hosts.device import device_label
    from retrofit.runner.sweep_config import dataset_specs

    settings: HostQualityConfig = job.settings
    base_dir = job.base_dir
    hosts = {name: get_path(name) for name in settings.hosts}
    (out,) = job.outputs(Path(settings.results_dir) / "host_quality.csv")
    rows = []
    for spec in dataset_specs(job.hydra_cfg, settings.datasets):
        for seed in settings.seeds:
            _, data = load_split(spec, seed, base_dir=base_dir)
            rows += score_case(spec.name, seed, data, hosts, settings.presets, settings.n_estimators, job.device)
            log.info("%s seed %d done", spec.name, seed)
    scores = pd.DataFrame(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out, index=False, float_format="%.6g")
    summary = summarise(scores)
    summary.to_csv(out.with_name("host_quality_summary.csv"), index=False)
    print(summary.to_string(index=False))
    first = settings.presets[0]
    probes = pd.concat(
        [
            extrapolation_probe(host_regressor(path, first, settings.n_estimators, seed=0, device=job.device)).assign(
                model=f"{host}[{first}]", device=device_label(job.device)
            )
            for host, path in hosts.items()
        ]
    )
    probes.to_csv(out.with_name("host_extrapolation.csv"), index=False, float_format="%.4f")
    print(
        probes.pivot_table(index="x_z", columns="model", values="pred_y_z")
        .assign(true_y_z=probes.groupby("x_z")["true_y_z"].first())
        .round(2)
        .to_string()
    )
    if settings.cards_dir:
        suite = _suite_rows(resolve(base_dir, settings.suite_summary)) if settings.suite_summary else None
        for host, path in hosts.items():
            ratios = per_dataset_ratios(scores, f"{host}[{first}]")
            own = None if suite is None else suite[suite["model"] == host].drop(columns="model")
            card = render_card(host, path, ratios, resolve(base_dir, settings.cards_dir), own)
            log.info("model card %s", card)
    log.info("wrote %s", out)


SUITE_COLUMNS = [
    "half",
    "model",
    "over_random_forest",
    "over_best_ridge_gb",
    "over_best",
    "worst_over_ridge",
    "meets_goal",
]
"""What a model card shows of the suite's summary (`benchmarks.suite.SUMMARY_DOCS`)."""


def _suite_rows(path: Path):
    """The suite summary's `SUITE_COLUMNS` at `path`, or None when `make suite` has not written it."""
    import pandas as pd

    return pd.read_csv(path)[SUITE_COLUMNS] if path.is_file() else None


if __name__ == "__main__":
    launch("host_quality")
