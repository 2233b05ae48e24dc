"""`make explain-bench`: Shapley values three ways on the shipped tiny_v3 host, per dataset.

Methods (the `method` column of results/removal_bench.csv):
  closed_batched   ours: `retrofit.removal.shapley` on the o_closed retrofit — every coalition a
                   batch element over the one fitted context, absence declared, no refit;
  refit_shapiq     shapiq's TabPFNImputer (remove-and-recontextualize): the stock regressor
                   refitted on each coalition's columns, one row and one coalition at a time;
  stock_zeroed     the stock host, the removed features' cells set to 0 after tabpfn's
                   preprocessing (context and query) — masking by value, batched like ours;
  closed_batched_rows  ours on `n_explain_batched` query rows at once (the first ones include
                   the `n_explain` rows the others explain): every row shares the context, so a
                   coalition costs one batch element for all of them, where a refit is per row.
All three use the same shapiq computation (exact over all 2^d coalitions where d <=
`exact_max_features`, else KernelSHAP with `budget` coalitions and the same `random_state`, so
the same coalitions), the same v(∅) (the closed model's value of the empty table, which a refit
cannot compute: shapiq takes it as `empty_prediction`), the same explained rows and the same
fitted settings. Features constant on the context rows are left out (a refit on them alone fails
in tabpfn). Categorical columns are left to tabpfn's per-column type inference (explicit
indices would not survive a refit on a reduced table). `seconds` is the process's CPU time per
explained row (`time.process_time`: on a shared machine wall time mostly measures the other
jobs); `speedup_vs_refit` = refit_shapiq's seconds / the method's; agreement with refit_shapiq:
Spearman rank correlation of the attributions per row (median over rows) and the largest
absolute difference.
"""

import logging
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import shapiq
import torch
from matplotlib.figure import Figure
from omegaconf import OmegaConf
from scipy.stats import spearmanr
from tabpfn import TabPFNRegressor

from retrofit.data import DatasetSpec
from retrofit.errors import RetrofitError
from retrofit.fitting import load_split
from retrofit.hosts import get_path, make_regressor
from retrofit.measure.timing import torch_threads
from retrofit.patching import retrofit
from retrofit.removal.columns import member_feature_columns
from retrofit.removal.context import evaluate
from retrofit.removal.features import values
from retrofit.removal.game import explain
from retrofit.runner.config import typed

log = logging.getLogger(__name__)

DATASET_DIR = Path(__file__).resolve().parents[2] / "configs" / "dataset"
"""The repository's dataset configs, read by name."""

COLUMNS = (
    "dataset",
    "n_features",
    "n_coalitions",
    "method",
    "seconds",
    "speedup_vs_refit",
    "rank_corr_median",
    "max_abs_diff_vs_refit",
)
METHODS = ("closed_batched", "closed_batched_rows", "refit_shapiq", "stock_zeroed")
EXAMPLE_METHODS = ("closed_batched", "refit_shapiq", "stock_zeroed")


@dataclass
class ExplainBenchConfig:
    """The schema of configs/explain_bench.yaml (see there for each setting's role)."""

    host: str = "tiny_v3"
    datasets: list[str] = field(default_factory=list)
    seed: int = 0
    n_estimators: int = 1
    max_train_rows: int = 100
    n_explain: int = 1
    n_explain_batched: int = 32
    exact_max_features: int = 7
    budget: int = 128
    random_state: int = 0
    repeats: int = 1
    feature_shift_method: str | None = "shuffle"
    threads: int = 1
    output: str = "results/removal_bench.csv"
    plot: str = "results/removal_bench.png"
    example_plot: str = "results/removal_bench_example.png"
    example_dataset: str = "diabetes"


@dataclass(frozen=True)
class Explained:
    """One dataset's attributions (n_explain, d) per method, the settings they share and timings."""

    dataset: str
    feature_names: tuple[str, ...]
    n_coalitions: int
    phi: dict[str, np.ndarray]
    seconds: dict[str, float]


def run(cfg: ExplainBenchConfig, datasets: list[DatasetSpec], base_dir: Path) -> tuple[pd.DataFrame, list[Explained]]:
    """Every dataset (`cfg.datasets`, resolved to `datasets`, files relative to `base_dir`)
    explained by every method; the table (`COLUMNS`) and the attributions. Writes `cfg.output`,
    `cfg.plot` and `cfg.example_plot` (relative to `base_dir`)."""
    cfg = OmegaConf.to_object(typed(ExplainBenchConfig, cfg, "explain_bench"))
    if [spec.name for spec in datasets] != list(cfg.datasets):
        raise RetrofitError(f"explain-bench: datasets {[s.name for s in datasets]} do not match cfg {cfg.datasets}")
    if not datasets or cfg.n_explain < 1 or cfg.repeats < 1 or cfg.budget < 2 or cfg.n_explain_batched < 1:
        raise RetrofitError(
            "explain-bench needs datasets, n_explain >= 1, n_explain_batched >= 1, repeats >= 1 and budget >= 2"
        )
    with torch_threads(cfg.threads):
        explained = [explain_dataset(cfg, spec, base_dir) for spec in datasets]
    table = pd.DataFrame([row for item in explained for row in _rows(item)], columns=list(COLUMNS))
    output = base_dir / cfg.output
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    plot_bench(table).savefig(base_dir / cfg.plot, dpi=120, bbox_inches="tight")
    example = next((item for item in explained if item.dataset == cfg.example_dataset), explained[0])
    plot_example(example).savefig(base_dir / cfg.example_plot, dpi=120, bbox_inches="tight")
    return table, explained


def explain_dataset(cfg: ExplainBenchConfig, spec: DatasetSpec, base_dir: Path) -> Explained:
    """Every method on dataset `spec` (see the module docstring)."""
    name = spec.name
    host_path = get_path(cfg.host)
    _, data = load_split(spec, cfg.seed, base_dir=base_dir)
    X_train, y_train = data.X_train[: cfg.max_train_rows], data.y_train[: cfg.max_train_rows]
    # a feature constant on the context carries nothing, and a refit on it alone fails in tabpfn
    # ("All features are constant"): every method explains the other features
    varying = np.array([len(np.unique(column[~np.isnan(column)])) > 1 for column in X_train.T])
    if not varying.all():
        log.info(
            "%s: features %s are constant on the context; left out", name, np.asarray(data.feature_names)[~varying]
        )
    X_train = X_train[:, varying]
    X_explain = data.X_test[: cfg.n_explain, varying]
    X_batched = data.X_test[: max(cfg.n_explain, cfg.n_explain_batched), varying]
    feature_names = tuple(np.asarray(data.feature_names)[varying])
    d = X_train.shape[1]
    budget = None if d <= cfg.exact_max_features else cfg.budget

    def fresh() -> TabPFNRegressor:
        return make_regressor(
            host_path,
            n_estimators=cfg.n_estimators,
            random_state=cfg.seed,
            inference_config={"FEATURE_SHIFT_METHOD": cfg.feature_shift_method},
        )

    stock = fresh().fit(X_train, y_train)
    closed = retrofit(stock, "o_closed")
    empty = float(values(closed, X_explain[:1], np.zeros((1, d), dtype=bool))[0, 0])
    shared = dict(n_features=d, budget=budget, index="SV", max_order=1, random_state=cfg.random_state)
    columns = member_feature_columns(stock)

    def zeroed(coalitions: np.ndarray) -> np.ndarray:
        def presence(member, _input, window):
            return None, torch.as_tensor(coalitions[window][:, columns[member]])

        return evaluate(stock, X_explain, len(coalitions), presence, declare=False)

    methods = {
        "closed_batched": (X_explain, lambda: explain(lambda c: values(closed, X_explain, c), **shared)),
        "closed_batched_rows": (X_batched, lambda: explain(lambda c: values(closed, X_batched, c), **shared)),
        "stock_zeroed": (X_explain, lambda: explain(zeroed, **shared)),
    }
    phi, seconds = {}, {}
    for method, (rows, fn) in methods.items():
        times = []
        for _ in range(cfg.repeats):
            start = time.process_time()
            phi[method] = fn()
            times.append(time.process_time() - start)
        seconds[method] = statistics.median(times) / len(rows)
    start = time.process_time()
    phi["refit_shapiq"] = refit_shapiq(fresh(), X_train, y_train, X_explain, empty, budget, cfg.random_state)
    seconds["refit_shapiq"] = (time.process_time() - start) / len(X_explain)
    n_coalitions = 2**d if budget is None else budget
    log.info("%s: d=%d, %d coalitions, seconds per row %s", name, d, n_coalitions, seconds)
    return Explained(name, feature_names, n_coalitions, phi, seconds)


def refit_shapiq(
    model: TabPFNRegressor,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_explain: np.ndarray,
    empty_prediction: float,
    budget: int | None,
    random_state: int,
) -> np.ndarray:
    """(n_explain, d) Shapley values from shapiq's own TabPFN imputer: a refit of `model` on the
    coalition's columns for every coalition of every row (exact or KernelSHAP as `explain`)."""
    d = X_train.shape[1]
    imputer = shapiq.TabPFNImputer(
        model,
        X_train,
        y_train,
        empty_prediction=empty_prediction,
        predict_function=lambda fitted, x: fitted.predict(x)[0],  # one row: the imputer takes a scalar
    )
    rows = []
    for x in X_explain:
        imputer.fit(x[None])
        if budget is None:
            result = shapiq.ExactComputer(imputer, d)("SV", 1)
        else:
            result = shapiq.KernelSHAP(d, random_state=random_state).approximate(budget, imputer)
        rows.append(result.get_n_order_values(1))
    return np.stack(rows)


def _rows(item: Explained) -> list[dict]:
    reference = item.phi["refit_shapiq"]
    rows = []
    for method in METHODS:
        phi = item.phi[method][: len(reference)]  # the rows the refit explained
        correlations = [spearmanr(a, b).statistic for a, b in zip(phi, reference, strict=True)]
        rows.append(
            dict(
                dataset=item.dataset,
                n_features=phi.shape[1],
                n_coalitions=item.n_coalitions,
                method=method,
                seconds=item.seconds[method],
                speedup_vs_refit=item.seconds["refit_shapiq"] / item.seconds[method],
                rank_corr_median=float(np.median(correlations)),
                max_abs_diff_vs_refit=float(np.abs(phi - reference).max()),
            )
        )
    return rows


def plot_bench(table: pd.DataFrame) -> Figure:
    """Speed-up over the refit (log scale) and rank agreement with it, per dataset and method."""
    figure = Figure(figsize=(10, 3.8))
    speed, agreement = figure.subplots(1, 2)
    datasets = list(dict.fromkeys(table.dataset))
    x = np.arange(len(datasets))
    others = [method for method in METHODS if method != "refit_shapiq"]
    for offset, method in zip((-0.27, 0, 0.27), others, strict=True):
        rows = table[table.method == method].set_index("dataset").loc[datasets]
        speed.bar(x + offset, rows.speedup_vs_refit, width=0.27, label=method)
        agreement.bar(x + offset, rows.rank_corr_median, width=0.27, label=method)
    speed.set_yscale("log")
    speed.axhline(1, color="k", lw=0.8)
    speed.set_ylabel("speed-up over refit_shapiq (per row)")
    agreement.set_ylabel("median Spearman ρ vs refit_shapiq")
    agreement.set_ylim(-1, 1.05)
    for axis in (speed, agreement):
        axis.set_xticks(x, datasets, rotation=30)
        axis.legend(fontsize=8)
    figure.suptitle("Shapley values on tiny_v3: batched closed removal vs refit per coalition vs zeroing")
    return figure


def plot_example(item: Explained) -> Figure:
    """The first explained row's attributions on `item`'s dataset, per method."""
    figure = Figure(figsize=(7, 3.6))
    axis = figure.subplots()
    y = np.arange(len(item.feature_names))
    for offset, method in zip((-0.27, 0, 0.27), EXAMPLE_METHODS, strict=True):
        axis.barh(y + offset, item.phi[method][0], height=0.27, label=method)
    axis.set_yticks(y, item.feature_names)
    axis.axvline(0, color="k", lw=0.8)
    axis.set_xlabel("Shapley value (prediction units)")
    axis.set_title(f"{item.dataset}: one test row, {item.n_coalitions} coalitions")
    axis.legend(fontsize=8)
    return figure
