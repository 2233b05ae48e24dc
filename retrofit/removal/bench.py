"""`make explain-bench`: Shapley values, interactions and data values on the shipped tiny_v3
host, ours against a refit per coalition, per dataset.

Methods (the `method` column of results/removal_bench.csv):
  closed_batched   ours: the removal game of the o_closed retrofit (`retrofit.removal`) — every
                   coalition a batch element over the one fitted context, absence declared,
                   the column tokens once per distinct column group, no refit;
  refit_shapiq     shapiq's TabPFNImputer (remove-and-recontextualize): the stock regressor
                   refitted on each coalition's columns, one row and one coalition at a time;
  stock_zeroed     the stock host, the removed features' cells set to 0 after tabpfn's
                   preprocessing (context and query) — masking by value, batched like ours;
  closed_batched_rows  ours on `n_explain_batched` query rows at once (the first ones include
                   the `n_explain` rows the others explain): every row shares the context, so a
                   coalition costs one batch element for all of them, where a refit is per row;
  refit_tabpfn     (index LOO only) the stock regressor refitted without each training row.
Indices (the `index` column): SV (Shapley values), k-SII (pairwise interactions, max_order 2;
the values of orders 1 and 2 are compared) and LOO (leave-one-out data values of the training
rows for the first `n_loo_queries` test rows: the mean squared error without the row minus with
all rows; ours `retrofit.removal.leave_one_out`, which keeps tabpfn's preprocessing fitted on all
rows, see docs/removal.md).
SV and k-SII use the same shapiq computation on every side: exact over all 2^d coalitions where
d <= `exact_max_features` (shapiq.ExactComputer evaluates the game once and both indices come
from those values, so one timed run gives both rows the same seconds), else KernelSHAP (SV) and
KernelSHAP-IQ (k-SII) with `budget` coalitions and the same `random_state` (the same
coalitions on every side, one timed run per index). All sides share v(∅) (the closed model's
value of the empty table, which a refit cannot compute: shapiq takes it as `empty_prediction`),
the explained rows and the fitted settings. Features constant on the context rows are left out
(a refit on them alone fails in tabpfn). Categorical columns are left to tabpfn's per-column type
inference (explicit indices would not survive a refit on a reduced table).
Timing: every run of a dataset in `repeats` interleaved rounds (`interleaved_times`, rotated
order, no warm-up call: ours is warm from the v(∅) evaluation, a refit run is hundreds of fits),
except stock_zeroed's, which runs once (`rounds` 1; `speedup_vs_refit` against the refit's median);
the process's CPU time (`time.process_time`: on a shared machine wall time mostly measures the
other jobs). `seconds`: the median per explained row (LOO: per valuation), with `seconds_min`,
`seconds_max`; `speedup_vs_refit`: the median over rounds of the refit's seconds / the method's in
the same round (`speedup_min`, `speedup_max`). Agreement with the refit: Spearman rank
correlation of the attributions per row (median over rows) and the largest absolute difference.
"""

import logging
import time
from collections.abc import Callable
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
from retrofit.measure.timing import interleaved_times, paired_ratios, spread, torch_threads
from retrofit.patching import retrofit
from retrofit.removal.columns import member_feature_columns
from retrofit.removal.context import evaluate
from retrofit.removal.features import values
from retrofit.removal.game import SharedValues, explain
from retrofit.removal.rows import leave_one_out
from retrofit.removal.stages import closed_stages, refit_stages
from retrofit.runner.config import typed

log = logging.getLogger(__name__)

COLUMNS = (
    "dataset",
    "n_features",
    "n_coalitions",
    "method",
    "seconds",
    "speedup_vs_refit",
    "rank_corr_median",
    "max_abs_diff_vs_refit",
    "index",
    "rounds",
    "seconds_min",
    "seconds_max",
    "speedup_min",
    "speedup_max",
)
METHODS = ("closed_batched", "closed_batched_rows", "refit_shapiq", "stock_zeroed")
"""The methods of the SV and k-SII rows (refit_shapiq the reference)."""
LOO_METHODS = ("closed_batched", "refit_tabpfn")
"""The methods of the LOO rows (refit_tabpfn the reference)."""
INDICES = {"SV": 1, "k-SII": 2}
"""Explanation index -> the max_order it runs with."""
EXAMPLE_METHODS = ("closed_batched", "refit_shapiq", "stock_zeroed")
UNTIMED_METHOD = "stock_zeroed"
"""Runs once, outside the interleaved rounds (its attributions are the point, not its speed)."""
STAGE_COLUMNS = ("dataset", "n_features", "n_coalitions", "method", "stage", "ms_per_coalition")
"""The columns of the stage table (`cfg.stages_output`, `retrofit.removal.stages`)."""


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
    exact_max_features: int = 12
    budget: int = 128
    indices: list[str] = field(default_factory=lambda: ["SV", "k-SII"])
    n_loo_queries: int = 32
    n_stage_coalitions: int = 64
    random_state: int = 0
    repeats: int = 3
    feature_shift_method: str | None = "shuffle"
    threads: int = 1
    output: str = "results/removal_bench.csv"
    plot: str = "results/removal_bench.png"
    example_plot: str = "results/removal_bench_example.png"
    stages_output: str = "results/removal_stages.csv"
    example_dataset: str = "diabetes"


@dataclass(frozen=True)
class Explained:
    """One dataset's results: per (index, method) the attributions (rows, values) and the CPU
    seconds of each timed round per explained row (LOO: per valuation)."""

    dataset: str
    feature_names: tuple[str, ...]
    n_coalitions: dict[str, int]
    attributions: dict[tuple[str, str], np.ndarray]
    seconds: dict[tuple[str, str], list[float]]
    stages: dict[tuple[str, str], float]
    """(method, stage) -> CPU ms per coalition (`retrofit.removal.stages`), one explained row."""


Run = Callable[[], dict[str, np.ndarray]]
"""A timed run: index -> attributions (rows, values)."""


def run(cfg: ExplainBenchConfig, datasets: list[DatasetSpec], base_dir: Path) -> tuple[pd.DataFrame, list[Explained]]:
    """Every dataset (`cfg.datasets`, resolved to `datasets`, files relative to `base_dir`)
    explained by every method; the table (`COLUMNS`) and the results. Writes `cfg.output`,
    `cfg.plot`, `cfg.example_plot` and `cfg.stages_output` (relative to `base_dir`)."""
    cfg = OmegaConf.to_object(typed(ExplainBenchConfig, cfg, "explain_bench"))
    if [spec.name for spec in datasets] != list(cfg.datasets):
        raise RetrofitError(f"explain-bench: datasets {[s.name for s in datasets]} do not match cfg {cfg.datasets}")
    counts = (cfg.n_explain, cfg.repeats, cfg.n_explain_batched, cfg.n_loo_queries, cfg.n_stage_coalitions)
    if not datasets or min(counts) < 1 or cfg.budget < 2:
        raise RetrofitError(
            "explain-bench needs datasets, n_explain, n_explain_batched, n_loo_queries, n_stage_coalitions and "
            "repeats >= 1 and budget >= 2"
        )
    unknown = sorted(set(cfg.indices) - set(INDICES))
    if unknown or "SV" not in cfg.indices:
        raise RetrofitError(
            f"explain-bench: indices must include 'SV' and be among {sorted(INDICES)}, got {cfg.indices}"
        )
    with torch_threads(cfg.threads):
        explained = [explain_dataset(cfg, spec, base_dir) for spec in datasets]
    table = pd.DataFrame([row for item in explained for row in _rows(item)], columns=list(COLUMNS))
    output = base_dir / cfg.output
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False, float_format="%.6g")
    stages = [
        dict(dataset=item.dataset, n_features=len(item.feature_names), n_coalitions=cfg.n_stage_coalitions)
        | dict(method=method, stage=stage, ms_per_coalition=ms)
        for item in explained
        for (method, stage), ms in item.stages.items()
    ]
    pd.DataFrame(stages, columns=list(STAGE_COLUMNS)).to_csv(
        base_dir / cfg.stages_output, index=False, float_format="%.4g"
    )
    plot_bench(table).savefig(base_dir / cfg.plot, dpi=120, bbox_inches="tight")
    example = next((item for item in explained if item.dataset == cfg.example_dataset), explained[0])
    plot_example(example).savefig(base_dir / cfg.example_plot, dpi=120, bbox_inches="tight")
    return table, explained


def explain_dataset(cfg: ExplainBenchConfig, spec: DatasetSpec, base_dir: Path) -> Explained:
    """Every method and index on dataset `spec`, timed interleaved (see the module docstring)."""
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
    X_loo, y_loo = data.X_test[: cfg.n_loo_queries, varying], data.y_test[: cfg.n_loo_queries]
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
    columns = member_feature_columns(stock)

    def zeroed(coalitions: np.ndarray) -> np.ndarray:
        def presence(member, _input):
            return None, torch.as_tensor(coalitions[:, columns[member]])

        return evaluate(stock, X_explain, len(coalitions), presence, declare=False)

    games = {
        "closed_batched": (lambda c: values(closed, X_explain, c), len(X_explain)),
        "closed_batched_rows": (lambda c: values(closed, X_batched, c), len(X_batched)),
        "stock_zeroed": (zeroed, len(X_explain)),
    }
    runs: dict[str, tuple[Run, int]] = {}
    groups = [tuple(cfg.indices)] if budget is None else [(index,) for index in cfg.indices]
    for indices in groups:
        suffix = "+".join(indices)
        for method, (game, n_rows) in games.items():
            runs[f"{method}/{suffix}"] = (_game_run(game, d, budget, indices, empty, cfg.random_state), n_rows)
        runs[f"refit_shapiq/{suffix}"] = (
            lambda indices=indices: refit_shapiq(
                fresh(), X_train, y_train, X_explain, empty, budget, cfg.random_state, indices
            ),
            len(X_explain),
        )
    runs["closed_batched/LOO"] = (lambda: {"LOO": leave_one_out(closed, X_loo, y_loo)[None]}, 1)
    runs["refit_tabpfn/LOO"] = (lambda: {"LOO": refit_leave_one_out(fresh, X_train, y_train, X_loo, y_loo)[None]}, 1)

    results: dict[str, dict[str, np.ndarray]] = {}

    def timed(key: str) -> Callable[[], None]:
        def call() -> None:
            results[key] = runs[key][0]()

        return call

    rounds = [key for key in runs if not key.startswith(UNTIMED_METHOD)]
    times = interleaved_times({key: timed(key) for key in rounds}, cfg.repeats, time.process_time, warmup=False)
    for key in set(runs) - set(rounds):  # the zeroed arm runs once: its speed is not the question
        start = time.process_time()
        timed(key)()
        times[key] = [time.process_time() - start]
    attributions, seconds = {}, {}
    for key, (_, n_rows) in runs.items():
        method = key.split("/")[0]
        for index, array in results[key].items():
            attributions[index, method] = array
            seconds[index, method] = [t / n_rows for t in times[key]]
    # where one row's coalition goes, on random coalitions (each feature present with probability 1/2)
    sample = np.random.default_rng(cfg.random_state).random((cfg.n_stage_coalitions, d)) < 0.5
    stages = {("closed_batched", stage): ms for stage, ms in closed_stages(closed, X_explain[:1], sample).items()}
    refit = refit_stages(fresh, X_train, y_train, X_explain[:1], sample)
    stages.update({("refit_shapiq", stage): ms for stage, ms in refit.items()})
    n_game = 2**d if budget is None else budget
    n_coalitions = {**dict.fromkeys(cfg.indices, n_game), "LOO": len(X_train) + 1}
    log.info(
        "%s: d=%d, coalitions %s, median seconds %s",
        name,
        d,
        n_coalitions,
        {k: spread(v)[0] for k, v in seconds.items()},
    )
    return Explained(name, feature_names, n_coalitions, attributions, seconds, stages)


def _game_run(
    game: Callable[[np.ndarray], np.ndarray],
    d: int,
    budget: int | None,
    indices: tuple[str, ...],
    empty: float,
    random_state: int,
) -> Run:
    """A run of `explain` for each index of `indices` on one memoised game (exact: one evaluation
    of all coalitions serves every index)."""

    def call() -> dict[str, np.ndarray]:
        shared = SharedValues(game)
        return {
            index: _as_array(
                explain(shared, d, budget, index, INDICES[index], random_state=random_state, empty_prediction=empty), d
            )
            for index in indices
        }

    return call


def refit_shapiq(
    model: TabPFNRegressor,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_explain: np.ndarray,
    empty_prediction: float,
    budget: int | None,
    random_state: int,
    indices: tuple[str, ...] = ("SV",),
) -> dict[str, np.ndarray]:
    """index -> (n_explain, values) from shapiq's own TabPFN imputer: a refit of `model` on the
    coalition's columns for every coalition of every row (exact: one ExactComputer per row serves
    every index; else KernelSHAP / KernelSHAP-IQ as `explain`)."""
    d = X_train.shape[1]
    imputer = shapiq.TabPFNImputer(
        model,
        X_train,
        y_train,
        empty_prediction=empty_prediction,
        predict_function=lambda fitted, x: fitted.predict(x)[0],  # one row: the imputer takes a scalar
    )
    rows: dict[str, list[np.ndarray]] = {index: [] for index in indices}
    for x in X_explain:
        imputer.fit(x[None])
        computer = shapiq.ExactComputer(imputer, d) if budget is None else None
        for index in indices:
            if computer is not None:
                result = computer(index, INDICES[index])
            elif index == "SV":
                result = shapiq.KernelSHAP(d, random_state=random_state).approximate(budget, imputer)
            else:
                approximator = shapiq.KernelSHAPIQ(d, max_order=INDICES[index], index=index, random_state=random_state)
                result = approximator.approximate(budget, imputer)
            rows[index].append(_as_array([result], d)[0])
    return {index: np.stack(found) for index, found in rows.items()}


def refit_leave_one_out(
    fresh: Callable[[], TabPFNRegressor],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_query: np.ndarray,
    y_query: np.ndarray,
) -> np.ndarray:
    """(n_train,) leave-one-out values by refitting: the mean squared error on (X_query, y_query)
    of a regressor fitted without each training row minus that of one fitted on all rows."""

    def loss(keep: np.ndarray) -> float:
        prediction = fresh().fit(X_train[keep], y_train[keep]).predict(X_query)
        return float(((prediction - y_query) ** 2).mean())

    without_NN = ~np.eye(len(X_train), dtype=bool)  # row i: every training row but i
    full = loss(np.ones(len(X_train), dtype=bool))
    return np.array([loss(keep) - full for keep in without_NN])


def _as_array(result: np.ndarray | list[shapiq.InteractionValues], d: int) -> np.ndarray:
    """Attributions (rows, values): Shapley values as they are, interactions as the values of
    order 1 (d) followed by order 2 (the d(d-1)/2 pairs i < j)."""
    if isinstance(result, np.ndarray):
        return result
    upper = np.triu_indices(d, 1)
    orders = [
        [item.get_n_order_values(1)] + ([item.get_n_order_values(2)[upper]] if item.max_order > 1 else [])
        for item in result
    ]
    return np.stack([np.concatenate(values_of_row) for values_of_row in orders])


def _rows(item: Explained) -> list[dict]:
    rows = []
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
            rows.append(
                dict(
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
    return rows


PLOTTED = (
    ("SV", "closed_batched"),
    ("SV", "closed_batched_rows"),
    ("SV", "stock_zeroed"),
    ("k-SII", "closed_batched"),
    ("LOO", "closed_batched"),
)
"""The (index, method) bars of the bench plot."""


def plot_bench(table: pd.DataFrame) -> Figure:
    """Speed-up over the refit (log scale, min-max over rounds) and rank agreement with it, per
    dataset, for the `PLOTTED` (index, method) pairs present in `table`."""
    figure = Figure(figsize=(12, 4))
    speed, agreement = figure.subplots(1, 2)
    datasets = list(dict.fromkeys(table.dataset))
    x = np.arange(len(datasets))
    bars = [pair for pair in PLOTTED if ((table["index"] == pair[0]) & (table.method == pair[1])).any()]
    width = 0.8 / len(bars)
    for i, (index, method) in enumerate(bars):
        rows = table[(table["index"] == index) & (table.method == method)].set_index("dataset").loc[datasets]
        offset, label = x + (i - (len(bars) - 1) / 2) * width, f"{method} ({index})"
        errors = [rows.speedup_vs_refit - rows.speedup_min, rows.speedup_max - rows.speedup_vs_refit]
        speed.bar(offset, rows.speedup_vs_refit, width=width, yerr=errors, capsize=2, label=label)
        agreement.bar(offset, rows.rank_corr_median, width=width, label=label)
    speed.set_yscale("log")
    speed.axhline(1, color="k", lw=0.8)
    speed.set_ylabel("speed-up over the refit per coalition (CPU time)")
    agreement.set_ylabel("median Spearman ρ vs the refit")
    agreement.set_ylim(-1, 1.05)
    for axis in (speed, agreement):
        axis.set_xticks(x, datasets, rotation=30)
        axis.legend(fontsize=7)
    figure.suptitle("Removal on tiny_v3: batched closed removal vs a refit per coalition vs zeroing")
    return figure


def plot_example(item: Explained) -> Figure:
    """The first explained row's Shapley values on `item`'s dataset, per method."""
    figure = Figure(figsize=(7, 3.6))
    axis = figure.subplots()
    y = np.arange(len(item.feature_names))
    for offset, method in zip((-0.27, 0, 0.27), EXAMPLE_METHODS, strict=True):
        axis.barh(y + offset, item.attributions["SV", method][0], height=0.27, label=method)
    axis.set_yticks(y, item.feature_names)
    axis.axvline(0, color="k", lw=0.8)
    axis.set_xlabel("Shapley value (prediction units)")
    axis.set_title(f"{item.dataset}: one test row, {item.n_coalitions['SV']} coalitions")
    axis.legend(fontsize=8)
    return figure
