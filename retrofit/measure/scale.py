"""Every architecture at tabpfn's default size: what the retrofit costs and whether it closes.

Per architecture (`make scale-check` -> `results/scale.csv`): a host at tabpfn's default
architecture config with random weights (`retrofit.hosts.random_host.default_size_host`), stored
as tabpfn publishes that version, validated as the sweep's `host=checkpoint` is
(`retrofit.hosts.check_checkpoint`, then `make_regressor`). On a synthetic table it measures, for
the stock model (`baseline`) and each variant:
- `time_ratio` (min, max): patched / stock predict seconds, per round of interleaved rounds after
  a warm-up (`retrofit.measure.timing`);
- `memory_ratio`: the peak growth of resident memory during one patched predict / during one stock
  predict, each in its own fresh process (`retrofit.measure.memory`);
- `clone_memory_ratio`: the resident memory that holding one more retrofit of the variant adds,
  divided by the model's weight bytes (parameters and buffers);
- `audit_rows_rel`, `audit_columns_rel`: the largest relative prediction change when absent train
  rows / feature columns are inserted at the model's input (`retrofit.audit`, on a smaller table);
and one `variant=predict_many` row: `retrofit.predict_many` over o_closed retrofits of tables of
different shapes vs one `predict` after another (`time_ratio` = predict_many / sequential), with
`max_rel_diff` its largest difference from `predict` relative to the prediction scale, and
`batched_tables` how many of the tables `predict_many` chose to batch (`retrofit.batching.batched_tables`).
`load_start`, `load_end`: the machine's 1-minute load average when the architecture's
measurements began and ended (other jobs share the cores; ratios are paired per round, but a
loaded machine widens their spread). Where a variant misses its time goal, `profiles` says where
the extra time goes: the ops whose CPU time grew most from stock to patched, in one predict each.
What cannot run is a `status=refused` row with the reason, never a number.
"""

import logging
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tabpfn import TabPFNRegressor

from retrofit.adapters import ARCHITECTURES
from retrofit.audit import Insertion, audit_host
from retrofit.batching import ForwardCost, batched_tables, member_inputs, predict_many
from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint, make_regressor
from retrofit.hosts.checkpoint import PUBLISHED_FORMATS
from retrofit.hosts.random_host import DEFAULT_SIZE_HEADS, default_size_host
from retrofit.hosts.validation import architecture_name
from retrofit.measure.memory import check_linux, make_rss_track_live_memory, peak_growth_mib, rss_mib
from retrofit.measure.timing import interleaved_times, paired_ratios, spread, torch_threads
from retrofit.patching import retrofit
from retrofit.typed import typed_object
from retrofit.variants import resolve_variant

log = logging.getLogger(__name__)

COLUMNS = (
    "arch",
    "variant",
    "status",
    "time_ratio",
    "time_ratio_min",
    "time_ratio_max",
    "memory_ratio",
    "clone_memory_ratio",
    "audit_rows_rel",
    "audit_columns_rel",
    "max_rel_diff",
    "rounds",
    "stock_seconds",
    "weight_mib",
    "reason",
    "batched_tables",
    "load_start",
    "load_end",
)
"""One row per architecture x variant (see the module docstring); `status`: measured or refused;
`stock_seconds`: the stock model's median predict seconds (predict_many row: sequential's);
`weight_mib`: the model's parameters and buffers; `batched_tables`: of the predict_many tables,
those run in padded shared forwards (the others ran their own predict); `load_start`,
`load_end`: 1-minute load average at the architecture's start and end."""

BASELINE, PREDICT_MANY = "baseline", "predict_many"

GOALS: dict[str, dict[str, float]] = {
    "full_o": {"time_ratio": 1.05, "memory_ratio": 1.10, "clone_memory_ratio": 0.05},
    "o_closed": {"time_ratio": 1.10, "memory_ratio": 1.10, "clone_memory_ratio": 0.05},
    PREDICT_MANY: {"time_ratio": 1.0},
}
"""Variant -> column -> the largest value that meets the goal."""


@dataclass
class ScaleConfig:
    """`configs/scale_check.yaml`. Tables are synthetic (normal columns, a linear target plus noise);
    `tables`: the predict_many tables, each `[n_train, n_test, n_features]`; `arch_overrides`:
    architecture -> config keys that replace tabpfn's defaults (empty: real size)."""

    archs: list[str] = field(default_factory=lambda: list(DEFAULT_SIZE_HEADS))
    variants: list[str] = field(default_factory=lambda: ["full_o", "o_closed"])
    n_train: int = 1000
    n_test: int = 300
    n_features: int = 10
    n_estimators: int = 1
    threads: int = 2
    rounds: int = 5
    audit_n_train: int = 200
    audit_n_test: int = 50
    n_null: int = 8
    tables: list[list[int]] = field(default_factory=lambda: [[200, 50, 10], [300, 60, 8], [400, 80, 6], [500, 100, 10]])
    arch_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    output: str = "results/scale.csv"

    @classmethod
    def from_config(cls, node: Any) -> "ScaleConfig":
        """The typed config; RetrofitError naming an unknown key, a wrong type or a bad value."""
        cfg = typed_object(cls, node, "scale_check config")
        unknown = [a for a in [*cfg.archs, *cfg.arch_overrides] if a not in DEFAULT_SIZE_HEADS]
        if unknown:
            raise RetrofitError(f"scale_check archs: {unknown} unknown; use some of {list(DEFAULT_SIZE_HEADS)}")
        if min(cfg.rounds, cfg.threads, cfg.n_estimators, cfg.n_null) < 1:
            raise RetrofitError("scale_check: rounds, threads, n_estimators and n_null must be >= 1")
        if any(len(t) != 3 or min(t) < 1 for t in cfg.tables):
            raise RetrofitError(f"scale_check tables must be [n_train, n_test, n_features] >= 1, got {cfg.tables}")
        return cfg


def synthetic_table(n_train: int, n_test: int, n_features: int, seed: int):
    """(X_train, y_train, X_test): normal columns, y linear in them plus 10% noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, n_features))
    y = X @ rng.normal(size=n_features) + 0.1 * rng.normal(size=n_train + n_test)
    return X[:n_train], y[:n_train], X[n_train:]


def fitted(path: Path, n_train: int, n_test: int, n_features: int, n_estimators: int, seed: int):
    """(a regressor on `path` fitted on a synthetic table, its test rows)."""
    X_train, y_train, X_test = synthetic_table(n_train, n_test, n_features, seed)
    return make_regressor(path, n_estimators=n_estimators, random_state=seed).fit(X_train, y_train), X_test


def weight_mib(regressor: TabPFNRegressor) -> float:
    """MiB of the parameters and buffers of the regressor's models."""
    tensors = [t for model in regressor.models_ for t in (*model.parameters(), *model.buffers())]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20


def _row(arch: str, variant: str, **values: Any) -> dict[str, Any]:
    row = dict.fromkeys(COLUMNS, np.nan) | {"arch": arch, "variant": variant, "status": "measured", "reason": ""}
    return row | values


def refused(arch: str, variant: str, reason: str) -> dict[str, Any]:
    """The row of what could not run, with its reason (first line)."""
    return _row(arch, variant, status="refused", reason=reason.splitlines()[0])


def scale_table(cfg: ScaleConfig, folder: Path) -> pd.DataFrame:
    """The rows of every architecture in `cfg.archs` (hosts written into `folder`)."""
    check_linux()
    rows = []
    for arch in cfg.archs:
        log.info("scale check: %s", arch)
        done = arch_rows(arch, cfg, Path(folder))
        log.info("scale check: %s done (in progress, not the result file):\n%s", arch, _progress(done))
        rows += done
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _progress(rows: list[dict[str, Any]]) -> str:
    """One architecture's rows as text, for the log while the others run."""
    return pd.DataFrame(rows, columns=list(COLUMNS)).drop(columns="reason").to_string(index=False, float_format="%.4g")


def arch_rows(arch: str, cfg: ScaleConfig, folder: Path) -> list[dict[str, Any]]:
    """baseline, each variant and predict_many of `arch` at its default size."""
    load_start = os.getloadavg()[0]
    labels = [BASELINE, *cfg.variants, PREDICT_MANY]
    written = default_size_host(arch, folder / arch, cfg.seed, cfg.arch_overrides.get(arch))
    try:
        path = check_checkpoint(written)
    except RetrofitError as err:  # the message names the file; its temporary folder says nothing
        return [refused(arch, label, str(err).replace(f"{written.parent}/", "")) for label in labels]
    spec = ARCHITECTURES[architecture_name(path)]
    reasons = {v: spec.refusal(resolve_variant(v)) for v in cfg.variants if spec.refusal(resolve_variant(v))}
    runnable = [v for v in cfg.variants if v not in reasons]
    with torch_threads(cfg.threads):
        timing, reasons = _timing(path, cfg, runnable, reasons)
        runnable = [v for v in runnable if v not in reasons]
        audit = _audit(arch, path, cfg, [BASELINE, *runnable])
        many = _predict_many_row(arch, path, cfg) if "o_closed" in runnable else None
    memory = {v: memory_probe(path, v, cfg) for v in [BASELINE, *runnable]}
    stock = memory[BASELINE]
    rows = []
    for v in [BASELINE, *cfg.variants]:
        if v in reasons:
            rows.append(refused(arch, v, reasons[v]))
            continue
        median, low, high = spread(timing["ratios"][v])
        rows.append(
            _row(
                arch,
                v,
                time_ratio=median,
                time_ratio_min=low,
                time_ratio_max=high,
                memory_ratio=memory[v]["predict_peak_mib"] / stock["predict_peak_mib"],
                clone_memory_ratio=memory[v]["clone_mib"] / memory[v]["weight_mib"],
                audit_rows_rel=audit[(v, "rows")],
                audit_columns_rel=audit[(v, "columns")],
                rounds=cfg.rounds,
                stock_seconds=timing["stock_seconds"],
                weight_mib=memory[v]["weight_mib"],
            )
        )
    if many is None:
        reason = reasons.get("o_closed", "o_closed is not among the variants measured")
        many = refused(arch, PREDICT_MANY, f"predict_many needs o_closed: {reason}")
    load = {"load_start": load_start, "load_end": os.getloadavg()[0]}
    return [row | load for row in [*rows, many]]


def _timing(path: Path, cfg: ScaleConfig, variants: list[str], reasons: dict[str, str]):
    """Interleaved predict times of the stock model and each variant's retrofit (one fitted regressor)."""
    regressor, X_test = fitted(path, cfg.n_train, cfg.n_test, cfg.n_features, cfg.n_estimators, cfg.seed)
    models: dict[str, TabPFNRegressor] = {BASELINE: regressor}
    reasons = dict(reasons)
    for v in variants:
        try:
            models[v] = retrofit(regressor, v)
        except RetrofitError as err:
            reasons[v] = str(err)
    fns: dict[str, Callable[[], object]] = {name: (lambda m=m: m.predict(X_test)) for name, m in models.items()}
    times = interleaved_times(fns, cfg.rounds)
    stock_seconds = spread(times[BASELINE])[0]
    return {"ratios": paired_ratios(times, BASELINE), "stock_seconds": stock_seconds}, reasons


def _audit(arch: str, path: Path, cfg: ScaleConfig, variants: list[str]) -> dict[tuple[str, str], float]:
    """(variant, rows|columns) -> the largest |prediction change| / max |prediction| under `n_null`
    absent train rows or feature columns at the input."""
    regressor, X_test = fitted(path, cfg.audit_n_train, cfg.audit_n_test, cfg.n_features, cfg.n_estimators, cfg.seed)
    insertions = (Insertion("input", "rows"), Insertion("input", "columns"))
    table = pd.DataFrame(
        audit_host(arch, regressor, X_test, {v: {"variant": v} for v in variants}, [cfg.n_null], cfg.seed, insertions)
    )
    table["rel"] = table.linf_pred / table.max_abs_pred
    return table.groupby(["variant", "null_kind"]).rel.max().to_dict()


def _predict_many_row(arch: str, path: Path, cfg: ScaleConfig) -> dict[str, Any]:
    """predict_many over o_closed retrofits of `cfg.tables` vs one predict after another."""
    pairs = []
    for i, (n_train, n_test, n_features) in enumerate(cfg.tables):
        regressor, X_test = fitted(path, n_train, n_test, n_features, cfg.n_estimators, cfg.seed + i)
        pairs.append((retrofit(regressor, "o_closed"), X_test))
    fns = {
        "sequential": lambda: [regressor.predict(X) for regressor, X in pairs],
        PREDICT_MANY: lambda: predict_many(pairs),
    }
    times = interleaved_times(fns, cfg.rounds)
    median, low, high = spread(paired_ratios(times, "sequential")[PREDICT_MANY])
    regressors = [regressor for regressor, _ in pairs]
    members = [m for i, (regressor, X) in enumerate(pairs) for m in member_inputs(i, regressor, X)]
    n_batched = len(batched_tables(members, ForwardCost.calibrated(regressors[0])))
    batched = predict_many(pairs)
    diff = max(
        float(np.max(np.abs(b - r.predict(X))) / np.max(np.abs(r.predict(X))))
        for b, (r, X) in zip(batched, pairs, strict=True)
    )
    return _row(
        arch,
        PREDICT_MANY,
        time_ratio=median,
        time_ratio_min=low,
        time_ratio_max=high,
        max_rel_diff=diff,
        batched_tables=n_batched,
        rounds=cfg.rounds,
        stock_seconds=spread(times["sequential"])[0],
    )


def memory_probe(path: Path, variant: str, cfg: ScaleConfig) -> dict[str, float]:
    """`_probe` of `variant` in a fresh process (spawned, so no memory of this one is counted)."""
    args = (str(path), variant, cfg.n_train, cfg.n_test, cfg.n_features, cfg.n_estimators, cfg.threads, cfg.seed)
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_probe, *args).result()


def _probe(
    path: str, variant: str, n_train: int, n_test: int, n_features: int, n_estimators: int, threads: int, seed: int
) -> dict[str, float]:
    """In this (fresh) process: the peak RSS growth of one predict by `variant` (the stock model for
    baseline), the RSS that a second retrofit of `variant` adds (the first one loads the adapters),
    and the model's weight MiB."""
    make_rss_track_live_memory()
    with torch_threads(threads):
        regressor, X_test = fitted(Path(path), n_train, n_test, n_features, n_estimators, seed)
        first = retrofit(regressor, variant)
        before = rss_mib()
        second = retrofit(regressor, variant)
        clone = rss_mib() - before
        del second
        model = regressor if variant == BASELINE else first
        peak = peak_growth_mib(lambda: model.predict(X_test))
    return {"predict_peak_mib": peak, "clone_mib": clone, "weight_mib": weight_mib(regressor)}


def goals_text() -> str:
    """The goals in one line."""
    return "; ".join(f"{v}: " + ", ".join(f"{c} <= {g}" for c, g in goals.items()) for v, goals in GOALS.items())


def verdict(value: float, goal: float, low: float = math.nan, high: float = math.nan) -> str:
    """`met` / `NOT MET` for a ratio against the largest value that meets its `goal`; for a timed
    ratio with its range over the rounds (`low`, `high`), `met` only when the whole range is within
    the goal and `NOT MET` only when none of it is: a range that straddles the goal is undecided."""
    if np.isfinite(low) and np.isfinite(high) and low <= goal < high:
        return f"undecided: its range [{low:.2f}x, {high:.2f}x] straddles the goal (more rounds or an idle machine)"
    return "met" if value <= goal else "NOT MET"


def goal_lines(table: pd.DataFrame) -> list[str]:
    """One line per measured row and goal: the value as a ratio (a time ratio with its range over
    the rounds and the load the architecture ran under), the goal and its `verdict`."""
    lines = []
    for row in table.itertuples(index=False):
        for column, goal in GOALS.get(row.variant, {}).items():
            value = getattr(row, column)
            if row.status != "measured" or not np.isfinite(value):
                continue
            timed = column == "time_ratio"
            low, high = (row.time_ratio_min, row.time_ratio_max) if timed else (math.nan, math.nan)
            spread_text = (
                f" (min {low:.2f}x, max {high:.2f}x; load {row.load_start:.1f}-{row.load_end:.1f})" if timed else ""
            )
            lines.append(
                f"{row.arch:12s} {row.variant:13s} {column:19s} {value:6.3f}x{spread_text} "
                f"goal <= {goal:.2f}x: {verdict(value, goal, low, high)}"
            )
    return lines


def worst_time_misses(table: pd.DataFrame) -> dict[str, str]:
    """arch -> its variant whose median time ratio misses its goal by the largest factor, among the
    misses that the whole range of rounds confirms (`verdict`; archs without one left out;
    predict_many aside: it has no stock side to profile against)."""
    misses = sorted(
        (row.time_ratio / GOALS[row.variant]["time_ratio"], row.arch, row.variant)
        for row in table.itertuples(index=False)
        if row.status == "measured"
        and row.variant in GOALS
        and row.variant != PREDICT_MANY
        and verdict(row.time_ratio, GOALS[row.variant]["time_ratio"], row.time_ratio_min, row.time_ratio_max)
        == "NOT MET"
    )
    return {arch: variant for _, arch, variant in misses}  # ascending: an arch's worst comes last


def miss_profiles(table: pd.DataFrame, cfg: ScaleConfig, folder: Path) -> list[str]:
    """`op_profile` of each architecture's worst time miss (`worst_time_misses`), on the host
    `scale_table` wrote into `folder`."""
    lines = []
    for arch, variant in worst_time_misses(table).items():
        path = Path(folder) / arch / PUBLISHED_FORMATS[arch].file_name
        lines += [f"{arch} {variant}: where the time goes", *op_profile(path, variant, cfg)]
    return lines


def op_profile(path: Path, variant: str, cfg: ScaleConfig, top: int = 8) -> list[str]:
    """Where a variant's extra predict time goes: one profiled predict of the stock model and one
    of `variant` (after a warm-up each) on the timed table; the `top` ops whose self CPU time grew
    most, with both times, and the totals."""
    from torch.profiler import ProfilerActivity, profile

    with torch_threads(cfg.threads):
        regressor, X_test = fitted(path, cfg.n_train, cfg.n_test, cfg.n_features, cfg.n_estimators, cfg.seed)
        seconds = {}
        for name, model in ((BASELINE, regressor), (variant, retrofit(regressor, variant))):
            model.predict(X_test)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                model.predict(X_test)
            seconds[name] = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages()}
    stock, patched = seconds[BASELINE], seconds[variant]
    growth = sorted(((patched.get(k, 0.0) - stock.get(k, 0.0), k) for k in {*stock, *patched}), reverse=True)
    lines = [
        f"op self CPU seconds, stock -> {variant} (total {sum(stock.values()):.2f} -> {sum(patched.values()):.2f}):"
    ]
    lines += [f"  {k:40s} {stock.get(k, 0.0):8.3f} -> {patched.get(k, 0.0):8.3f} (+{d:.3f})" for d, k in growth[:top]]
    return lines


def refused_lines(table: pd.DataFrame) -> Sequence[str]:
    """One line per refused row: what and why."""
    return [f"{r.arch} {r.variant}: refused: {r.reason}" for r in table.itertuples() if r.status == "refused"]
