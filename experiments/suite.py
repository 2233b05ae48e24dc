"""The suite's baselines and summaries (`make suite`, `configs/suite.yaml`; docs/suite.md): on each
table × seed of the suite, ridge, a random forest, gradient boosting and the mean predictor fitted on
the split the suite's sweep used (`benchmarks.host_baselines.BASELINES`), scored beside the hosts'
stock RMSE from that sweep's `retrofit_rmse.csv` in `output_dir`. Writes there `suite_scores.csv`
(long: one row per table × seed × model), `suite_tables.csv` (per table × model), `suite_summary.csv`
(per half × model), `suite_deltas.csv` (matched ΔRMSE per half × host × variant), `suite_ratios.png`
and `suite.md`."""

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import MISSING

from retrofit.errors import RunnerError
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

log = logging.getLogger(__name__)


@dataclass
class SuiteConfig:
    """The schema of `configs/suite.yaml` (each key's role is written there; the `suite_*` lists
    come from `configs/suite_tables/`)."""

    suite_development: str = MISSING
    suite_held_out: str = MISSING
    suite_datasets: str = MISSING
    suite_seeds: str = MISSING
    output_dir: str = MISSING
    noise_floors: str = MISSING
    seeds: list[int] = MISSING
    development: list[str] = MISSING
    held_out: list[str] = MISSING
    bootstrap_draws: int = MISSING
    n_jobs: int = MISSING


SCHEMA = SuiteConfig
FILES = (
    "suite_scores.csv",
    "suite_tables.csv",
    "suite_summary.csv",
    "suite_deltas.csv",
    "suite_ratios.png",
    "suite.md",
)


def _baselines(spec, seed: int, base_dir: Path) -> list[dict]:
    from benchmarks.host_baselines import score_case
    from retrofit.fitting import load_split

    _, split = load_split(spec, seed, base_dir=base_dir)
    return score_case(spec.name, seed, split, hosts={}, presets=(), n_estimators=0)


def run(job: JobStart) -> None:
    """Fit the baselines, read the hosts' side, write the suite's files (module docstring)."""
    import pandas as pd
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    from benchmarks.suite import SCORE_DOCS, check_matched, delta_summary, host_scores, per_table, summarise
    from benchmarks.suite_figures import plot_ratios, render_page
    from retrofit.measure.floor_table import read_floors
    from retrofit.results.reproduction import read_results
    from retrofit.runner import resolve
    from retrofit.runner.sweep_config import dataset_specs

    settings: SuiteConfig = job.settings
    out_dir = resolve(job.base_dir, settings.output_dir)
    outputs = job.outputs(*(out_dir / name for name in FILES))
    halves = {name: "development" for name in settings.development} | {name: "held_out" for name in settings.held_out}
    sweep_csv = out_dir / "retrofit_rmse.csv"
    if not sweep_csv.is_file():
        raise RunnerError(f"{sweep_csv} does not exist: run the suite's sweep there first (make suite runs both)")
    sweep = read_results(sweep_csv, str(sweep_csv))
    hosts = host_scores(sweep, halves, settings.seeds)
    specs = dataset_specs(job.hydra_cfg, list(halves))
    work = [(spec, seed) for spec in specs for seed in settings.seeds]
    parallel = Parallel(n_jobs=settings.n_jobs, return_as="generator")
    jobs = parallel(delayed(_baselines)(spec, seed, job.base_dir) for spec, seed in work)
    rows = [row for case in tqdm(jobs, total=len(work), desc="baselines", unit="case") for row in case]
    baselines = pd.DataFrame(rows)[["dataset", "seed", "model", "rmse", "n_train", "n_test"]]
    scores = pd.concat([hosts, baselines], ignore_index=True)
    check_matched(scores)
    scores = scores.assign(half=scores["dataset"].map(halves))[list(SCORE_DOCS)]
    tables = per_table(scores, halves)
    summary = summarise(tables, settings.bootstrap_draws)
    floors_file = resolve(job.base_dir, settings.noise_floors)
    floors = (
        {h: f for (h, device), f in read_floors(floors_file).items() if device == "cpu"}
        if floors_file.is_file()
        else {}
    )
    deltas = delta_summary(sweep, halves, floors, settings.bootstrap_draws)
    out_dir.mkdir(parents=True, exist_ok=True)
    for frame, path in zip((scores, tables, summary, deltas), outputs[:4], strict=True):
        frame.to_csv(path, index=False, float_format="%.6g")
    plot_ratios(tables, outputs[4])
    render_page(summary, deltas, outputs[5], "make suite")
    print(summary[summary["kind"] == "host"].round(3).to_string(index=False))
    log.info("wrote %s", ", ".join(str(p) for p in outputs))


if __name__ == "__main__":
    launch("suite")
