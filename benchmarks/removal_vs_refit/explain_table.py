"""The explanation benchmark's table: one row per host, dataset, index and method (`COLUMNS`),
the stage table, and the figures, written where its settings say (`run`)."""

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from benchmarks.removal_vs_refit.dataset import Explained, explain_dataset
from benchmarks.removal_vs_refit.explain_plots import plot_bench, plot_example
from benchmarks.removal_vs_refit.explain_settings import ExplainBenchConfig
from retrofit.data import DatasetSpec
from retrofit.errors import RetrofitError
from retrofit.labels import DEVICE_DOC
from retrofit.measure.timing import paired_ratios, spread, torch_threads

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "device": DEVICE_DOC,
    "dataset": ("label", "dataset name"),
    "n_features": ("count", "features explained (the players)"),
    "n_coalitions": ("count", "feature coalitions evaluated per explained row"),
    "method": ("label", "how a coalition is evaluated (`benchmarks.removal_vs_refit`): ours or a refit reference"),
    "seconds": ("s", "median seconds of the method over the timing rounds (CPU seconds on the CPU, wall on CUDA)"),
    "speedup_vs_refit": ("ratio", "median per-round reference seconds / the method's"),
    "rank_corr_median": (
        "Spearman ρ",
        "median over explained rows of the rank correlation with the reference's values",
    ),
    "max_abs_diff_vs_refit": ("index units", "largest |value − reference value| over the rows the reference explained"),
    "index": ("label", "`SV` (Shapley values), `k-SII` (pairwise interactions) or `LOO` (leave-one-out data values)"),
    "rounds": ("count", "timing rounds"),
    "seconds_min": ("s", "fastest round"),
    "seconds_max": ("s", "slowest round"),
    "speedup_min": ("ratio", "smallest per-round speed-up"),
    "speedup_max": ("ratio", "largest per-round speed-up"),
}
"""Column -> (unit, meaning) of `results/removal_bench.csv`, in order."""
COLUMNS = tuple(COLUMN_DOCS)
METHODS = ("closed_batched", "closed_batched_rows", "refit_shapiq", "stock_zeroed")
"""The methods of the SV and k-SII rows (refit_shapiq the reference)."""
LOO_METHODS = ("closed_batched", "refit_tabpfn")
"""The methods of the LOO rows (refit_tabpfn the reference)."""
STAGE_DOCS = {
    **{name: COLUMN_DOCS[name] for name in ("host", "device", "dataset", "n_features")},
    "n_coalitions": ("count", "coalitions the stages were timed on"),
    "method": COLUMN_DOCS["method"],
    "stage": ("label", "a stage of evaluating a coalition (`retrofit.removal.stages`)"),
    "ms_per_coalition": ("CPU ms", "CPU milliseconds the stage takes per coalition (on CUDA: wall milliseconds)"),
}
"""Column -> (unit, meaning) of the stage table, `results/removal_stages.csv`, in order."""
STAGE_COLUMNS = tuple(STAGE_DOCS)
"""The columns of the stage table (`stages_output`, `retrofit.removal.stages`)."""


def run(cfg: Any, datasets: list[DatasetSpec], base_dir: Path) -> tuple[pd.DataFrame, list[Explained]]:
    """Every dataset (`cfg.datasets`, resolved to `datasets`, files relative to `base_dir`)
    explained by every method on every host of `cfg.hosts`; the table (`COLUMNS`) and the results.
    Writes `cfg.output`, `cfg.plot`, `cfg.example_plot` and `cfg.stages_output` (relative to
    `base_dir`). `cfg`: the settings, or a config node `ExplainBenchConfig.from_config` checks."""
    cfg = cfg if isinstance(cfg, ExplainBenchConfig) else ExplainBenchConfig.from_config(cfg)
    if [spec.name for spec in datasets] != list(cfg.datasets):
        raise RetrofitError(f"explain-bench: datasets {[s.name for s in datasets]} do not match cfg {cfg.datasets}")
    with torch_threads(cfg.threads):
        explained = [explain_dataset(cfg, host, spec, base_dir) for host in cfg.hosts for spec in datasets]
    table = pd.DataFrame([row for item in explained for row in rows(item)], columns=list(COLUMNS))
    output = base_dir / cfg.output
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    stage_table(explained, cfg.n_stage_coalitions).to_csv(
        base_dir / cfg.stages_output, index=False, float_format="%.4g"
    )
    plot_bench(table).savefig(base_dir / cfg.plot, dpi=120, bbox_inches="tight")
    examples = [item for item in explained if item.dataset == cfg.example_dataset] or explained[:1]
    plot_example(examples).savefig(base_dir / cfg.example_plot, dpi=120, bbox_inches="tight")
    return table, explained


def stage_table(explained: list[Explained], n_coalitions: int) -> pd.DataFrame:
    """CPU ms per coalition per stage (`STAGE_COLUMNS`), ours and the refit, per host and dataset."""
    stages = [
        dict(
            host=item.host,
            device=item.device,
            dataset=item.dataset,
            n_features=len(item.feature_names),
            n_coalitions=n_coalitions,
        )
        | dict(method=method, stage=stage, ms_per_coalition=ms)
        for item in explained
        for (method, stage), ms in item.stages.items()
    ]
    return pd.DataFrame(stages, columns=list(STAGE_COLUMNS))


def rows(item: Explained) -> list[dict]:
    """The table's rows of one host on one dataset: per index, each method against the reference
    (seconds and speed-up over the rounds, rank agreement and largest difference on the rows the
    reference explained)."""
    found_rows = []
    for index in dict.fromkeys(index for index, _ in item.attributions):
        methods, reference = (LOO_METHODS, "refit_tabpfn") if index == "LOO" else (METHODS, "refit_shapiq")
        target = item.attributions[index, reference]
        reference_seconds = item.seconds[index, reference]
        for method in methods:
            paired = len(item.seconds[index, method]) == len(reference_seconds)
            own = item.seconds[index, method] if paired else [spread(item.seconds[index, method])[0]]
            base = reference_seconds if paired else [spread(reference_seconds)[0]]
            ratios = paired_ratios({method: own, reference: base}, reference)[method]
            found = item.attributions[index, method][: len(target)]  # the rows the refit explained
            correlations = [spearmanr(a, b).statistic for a, b in zip(found, target, strict=True)]
            seconds, speedups = spread(item.seconds[index, method]), spread([1 / r for r in ratios])
            found_rows.append(
                dict(
                    host=item.host,
                    device=item.device,
                    dataset=item.dataset,
                    n_features=len(item.feature_names),
                    n_coalitions=item.n_coalitions[index],
                    method=method,
                    seconds=seconds[0],
                    speedup_vs_refit=speedups[0],
                    rank_corr_median=float(np.median(correlations)),
                    max_abs_diff_vs_refit=float(np.abs(found - target).max()),
                    index=index,
                    rounds=len(item.seconds[index, method]),
                    seconds_min=seconds[1],
                    seconds_max=seconds[2],
                    speedup_min=speedups[1],
                    speedup_max=speedups[2],
                )
            )
    return found_rows
