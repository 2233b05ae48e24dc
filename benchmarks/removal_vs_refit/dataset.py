"""One shipped host on one dataset, explained by every method and index, timed interleaved
(`explain_dataset`; the methods, indices and timing are described in `benchmarks.removal_vs_refit`)."""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tabpfn import TabPFNRegressor

from benchmarks.removal_vs_refit.explain_settings import ExplainBenchConfig
from benchmarks.removal_vs_refit.refits import INDICES, as_array, refit_leave_one_out, refit_shapiq
from retrofit.data import DatasetSpec
from retrofit.fitting import load_split
from retrofit.hosts import get_path, inference_config, make_regressor
from retrofit.hosts.device import device_clock, device_label
from retrofit.measure.timing import interleaved_times, spread
from retrofit.member_columns import member_feature_columns
from retrofit.patching import retrofit
from retrofit.removal.context import evaluate
from retrofit.removal.features import values
from retrofit.removal.game import SharedValues, explain
from retrofit.removal.rows import leave_one_out
from retrofit.removal.stages import closed_stages, refit_stages

log = logging.getLogger(__name__)

UNTIMED_METHOD = "stock_zeroed"
"""Runs once, outside the interleaved rounds (its attributions are the point, not its speed)."""

Run = Callable[[], dict[str, np.ndarray]]
"""A timed run: index -> attributions (rows, values)."""
RunKey = tuple[str, tuple[str, ...]]
"""A run's method and the indices it computes (exact: SV and k-SII from one evaluation)."""


@dataclass(frozen=True)
class Explained:
    """One host's results on one dataset: per (index, method) the attributions (rows, values) and
    the CPU seconds of each timed round per explained row (LOO: per valuation)."""

    host: str
    dataset: str
    feature_names: tuple[str, ...]
    n_coalitions: dict[str, int]
    attributions: dict[tuple[str, str], np.ndarray]
    seconds: dict[tuple[str, str], list[float]]
    stages: dict[tuple[str, str], float]
    """(method, stage) -> CPU ms per coalition (`retrofit.removal.stages`), one explained row."""
    device: str = "cpu"
    """What the host ran on (`retrofit.hosts.device.device_label`)."""


@dataclass(frozen=True)
class Rows:
    """The rows every method of one dataset shares: the context (the first `max_train_rows` of the
    seeded training split), the explained, batched and leave-one-out query rows, on the features
    that vary on the context (a feature constant there carries nothing, and a refit on it alone
    fails in tabpfn: "All features are constant")."""

    feature_names: tuple[str, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_explain: np.ndarray
    X_batched: np.ndarray
    X_loo: np.ndarray
    y_loo: np.ndarray


def shared_rows(cfg: ExplainBenchConfig, spec: DatasetSpec, base_dir: Path) -> Rows:
    """The `Rows` of dataset `spec` (files relative to `base_dir`)."""
    _, data = load_split(spec, cfg.seed, base_dir=base_dir)
    X_train, y_train = data.X_train[: cfg.max_train_rows], data.y_train[: cfg.max_train_rows]
    varying = np.array([len(np.unique(column[~np.isnan(column)])) > 1 for column in X_train.T])
    if not varying.all():
        constant = np.asarray(data.feature_names)[~varying]
        log.info("%s: features %s are constant on the context; left out", spec.name, constant)
    return Rows(
        feature_names=tuple(np.asarray(data.feature_names)[varying]),
        X_train=X_train[:, varying],
        y_train=y_train,
        X_explain=data.X_test[: cfg.n_explain, varying],
        X_batched=data.X_test[: max(cfg.n_explain, cfg.n_explain_batched), varying],
        X_loo=data.X_test[: cfg.n_loo_queries, varying],
        y_loo=data.y_test[: cfg.n_loo_queries],
    )


def regressor_factory(cfg: ExplainBenchConfig, host: str) -> Callable[[], TabPFNRegressor]:
    """A fresh unfitted regressor of the shipped `host` with the benchmark's fit settings."""
    host_path = get_path(host)
    preset = {} if cfg.inference_preset is None else inference_config(cfg.inference_preset)

    def fresh() -> TabPFNRegressor:
        return make_regressor(
            host_path,
            n_estimators=cfg.n_estimators,
            random_state=cfg.seed,
            device=cfg.device,
            inference_config={**preset, "FEATURE_SHIFT_METHOD": cfg.feature_shift_method},
        )

    return fresh


def method_runs(
    cfg: ExplainBenchConfig, rows: Rows, fresh: Callable[[], TabPFNRegressor], budget: int | None
) -> tuple[dict[RunKey, tuple[Run, int]], TabPFNRegressor]:
    """Every method's runs on `rows` (with the rows each explains) and the o_closed regressor they
    share; all share v(∅), the closed model's value of the empty table."""
    stock = fresh().fit(rows.X_train, rows.y_train)
    closed = retrofit(stock, "o_closed")
    d = rows.X_train.shape[1]
    empty = float(values(closed, rows.X_explain[:1], np.zeros((1, d), dtype=bool))[0, 0])
    columns = member_feature_columns(stock)

    def zeroed(coalitions: np.ndarray) -> np.ndarray:
        def presence(member, _input):
            return None, torch.as_tensor(coalitions[:, columns[member]])

        return evaluate(stock, rows.X_explain, len(coalitions), presence, declare=False)

    games = {
        "closed_batched": (lambda c: values(closed, rows.X_explain, c), len(rows.X_explain)),
        "closed_batched_rows": (lambda c: values(closed, rows.X_batched, c), len(rows.X_batched)),
        UNTIMED_METHOD: (zeroed, len(rows.X_explain)),
    }
    runs: dict[RunKey, tuple[Run, int]] = {}
    for indices in [tuple(cfg.indices)] if budget is None else [(index,) for index in cfg.indices]:
        for method, (game, n_rows) in games.items():
            runs[method, indices] = (_game_run(game, d, budget, indices, empty, cfg.random_state), n_rows)
        refit = (rows.X_train, rows.y_train, rows.X_explain, empty, budget, cfg.random_state, indices)
        runs["refit_shapiq", indices] = (lambda refit=refit: refit_shapiq(fresh(), *refit), len(rows.X_explain))
    loo = (rows.X_train, rows.y_train, rows.X_loo, rows.y_loo)
    runs["closed_batched", ("LOO",)] = (lambda: {"LOO": leave_one_out(closed, *loo[2:])[None]}, 1)
    runs["refit_tabpfn", ("LOO",)] = (lambda: {"LOO": refit_leave_one_out(fresh, *loo)[None]}, 1)
    return runs, closed


def timed(
    cfg: ExplainBenchConfig, runs: dict[RunKey, tuple[Run, int]]
) -> tuple[dict[RunKey, dict[str, np.ndarray]], dict[RunKey, list[float]]]:
    """Each run's results and CPU seconds per round: `repeats` interleaved rounds, except the
    untimed method's, which runs once."""
    results: dict[RunKey, dict[str, np.ndarray]] = {}

    def call(key: RunKey) -> Callable[[], None]:
        def store() -> None:
            results[key] = runs[key][0]()

        return store

    rounds = [key for key in runs if key[0] != UNTIMED_METHOD]
    clock = device_clock(cfg.device, time.process_time)
    times = interleaved_times({key: call(key) for key in rounds}, cfg.repeats, clock, warmup=False)
    for key in (key for key in runs if key[0] == UNTIMED_METHOD):
        start = clock()
        call(key)()
        times[key] = [clock() - start]
    return results, times


def explain_dataset(cfg: ExplainBenchConfig, host: str, spec: DatasetSpec, base_dir: Path) -> Explained:
    """Every method and index on dataset `spec` and the shipped host `host`, timed interleaved,
    with where one row's coalition goes per stage (random coalitions, each feature present with
    probability 1/2)."""
    rows = shared_rows(cfg, spec, base_dir)
    d = rows.X_train.shape[1]
    budget = None if d <= cfg.exact_max_features else cfg.budget
    fresh = regressor_factory(cfg, host)
    runs, closed = method_runs(cfg, rows, fresh, budget)
    results, times = timed(cfg, runs)
    attributions, seconds = {}, {}
    for key, (_, n_rows) in runs.items():
        for index, array in results[key].items():
            attributions[index, key[0]] = array
            seconds[index, key[0]] = [t / n_rows for t in times[key]]
    sample = np.random.default_rng(cfg.random_state).random((cfg.n_stage_coalitions, d)) < 0.5
    stages = {("closed_batched", stage): ms for stage, ms in closed_stages(closed, rows.X_explain[:1], sample).items()}
    refit = refit_stages(fresh, rows.X_train, rows.y_train, rows.X_explain[:1], sample)
    stages.update({("refit_shapiq", stage): ms for stage, ms in refit.items()})
    n_coalitions = {**dict.fromkeys(cfg.indices, 2**d if budget is None else budget), "LOO": len(rows.X_train) + 1}
    medians = {key: spread(value)[0] for key, value in seconds.items()}
    log.info("%s on %s: d=%d, coalitions %s, median seconds %s", spec.name, host, d, n_coalitions, medians)
    label = device_label(closed.devices_[0])
    return Explained(host, spec.name, rows.feature_names, n_coalitions, attributions, seconds, stages, label)


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
            index: as_array(
                explain(shared, d, budget, index, INDICES[index], random_state=random_state, empty_prediction=empty), d
            )
            for index in indices
        }

    return call
