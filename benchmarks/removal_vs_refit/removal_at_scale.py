"""Removal explanations at tabpfn's default size (`make explain-scale` -> results/removal_scale.csv).

Per architecture: a host at tabpfn's default architecture config with random weights
(`retrofit.hosts.random_host.default_size_host`, stored as tabpfn publishes it and validated as
`host=checkpoint` is), fitted on a synthetic table with the preset feature removal accepts
(`inference_preset` without feature shuffling) and retrofitted `o_closed`. Against a refit of an
o_closed regressor on the table without the removed features (or training row), one row per
`quantity` (`COLUMNS`):
- `values`: `retrofit.removal.values` over all 2^d feature coalitions of the explained rows, the
  refit per non-empty coalition (a refit cannot fit an empty table; both sides share v(∅));
- `SV`, `k-SII`: exact Shapley values and pairwise interactions (`retrofit.removal.shapley`),
  the reference's from the same shapiq computation over the refits' values (`explain`), with
  `efficiency_rel` the largest |Σφ − (v(all) − v(∅))| (SV);
- `invariance`: v(S) when every feature outside S of the explained rows is redrawn — the
  contract is that it does not move;
- `LOO`: `retrofit.removal.leave_one_out` against a refit without each training row. Removal
  keeps tabpfn's preprocessing fitted on all rows (docs/removal.md), so this row measures
  agreement (`rank_corr`), not equality.
Differences are relative to the prediction scale (the largest |prediction| of the explained
rows; LOO: of the refit's values). Timing: ours and the refits in `rounds` interleaved rounds
of CPU time (`time.process_time`, `threads` torch threads; on CUDA synchronized wall time,
`retrofit.hosts.device.device_clock`), the first round's results compared;
`speedup` = refit / ours per round (median, min, max). SV, k-SII and invariance come from the
values already timed and carry no time.
"""

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from benchmarks.removal_vs_refit.explain_scale_settings import ExplainScaleConfig
from benchmarks.removal_vs_refit.refits import INDICES, as_array
from benchmarks.scale.scale_settings import synthetic_table
from retrofit.adapters import ARCHITECTURES
from retrofit.hosts import check_checkpoint, inference_config, make_regressor
from retrofit.hosts.device import device_clock, device_label
from retrofit.hosts.random_host import default_size_host
from retrofit.hosts.validation import architecture_name
from retrofit.labels import DEVICE_DOC
from retrofit.measure.timing import interleaved_times, paired_ratios, spread, torch_threads
from retrofit.patching import retrofit
from retrofit.removal import leave_one_out, shapley, values
from retrofit.removal.game import all_coalitions, explain
from retrofit.variants import resolve_variant

log = logging.getLogger(__name__)

COLUMN_DOCS = {
    "arch": ("label", "tabpfn architecture at its default size, random weights"),
    "quantity": (
        "label",
        "`values`, `SV`, `k-SII`, `invariance` or `LOO` (see `benchmarks.removal_vs_refit.removal_at_scale`)",
    ),
    "device": DEVICE_DOC,
    "status": ("label", "`measured` or `refused`"),
    "n_train": ("count", "training rows of the fitted context"),
    "n_features": ("count", "features (the players)"),
    "n_rows": ("count", "explained query rows (LOO: query rows of the loss)"),
    "n_evaluations": ("count", "coalitions (LOO: training rows) the refit reference fits one regressor for"),
    "max_rel_diff": ("relative change", "largest |ours − refit| / the prediction scale (invariance: redrawn − kept)"),
    "efficiency_rel": ("relative change", "SV: largest |Σφ − (v(all) − v(∅))| / the prediction scale"),
    "rank_corr": ("Spearman ρ", "LOO: rank correlation of ours with the refit's values"),
    "ours_seconds": ("CPU s", "median CPU seconds of ours over the rounds (on CUDA: wall seconds)"),
    "refit_seconds": ("CPU s", "median CPU seconds of the refits over the rounds (on CUDA: wall seconds)"),
    "speedup": ("ratio", "median per-round refit / ours CPU seconds"),
    "speedup_min": ("ratio", "smallest per-round speed-up"),
    "speedup_max": ("ratio", "largest per-round speed-up"),
    "rounds": ("count", "interleaved timing rounds"),
    "load_start": ("load", "1-minute load average at the architecture's start"),
    "load_end": ("load", "1-minute load average at its end"),
    "reason": ("text", "why a refused row could not run (first line); empty if measured"),
}
"""Column -> (unit, meaning) of `results/removal_scale.csv`, in order."""
COLUMNS = tuple(COLUMN_DOCS)
QUANTITIES = ("values", "SV", "k-SII", "invariance", "LOO")


def scale_table(cfg: ExplainScaleConfig, folder: Path) -> pd.DataFrame:
    """The rows (`COLUMNS`) of every architecture in `cfg.archs`, hosts written into `folder`."""
    rows = []
    with torch_threads(cfg.threads):
        for arch in cfg.archs:
            log.info("explain at scale: %s", arch)
            load_start = os.getloadavg()[0]
            found = arch_rows(arch, cfg, Path(folder) / arch)
            load = {"device": device_label(cfg.device), "load_start": load_start, "load_end": os.getloadavg()[0]}
            rows += [entry | load for entry in found]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def arch_rows(arch: str, cfg: ExplainScaleConfig, folder: Path) -> list[dict[str, Any]]:
    """The `QUANTITIES` rows of `arch` at its default size, or one refused row per quantity."""
    path = check_checkpoint(default_size_host(arch, folder, cfg.seed, cfg.arch_overrides.get(arch)))
    refusal = ARCHITECTURES[architecture_name(path)].refusal(resolve_variant("o_closed"))
    if refusal:
        return [_row(arch, q, status="refused", reason=refusal.splitlines()[0]) for q in QUANTITIES]
    X_all, y_all, X_explain = synthetic_table(cfg.n_train + cfg.n_loo_queries, cfg.n_explain, cfg.n_features, cfg.seed)
    X, y = X_all[: cfg.n_train], y_all[: cfg.n_train]
    X_loo, y_loo = X_all[cfg.n_train :], y_all[cfg.n_train :]  # the leave-one-out loss's query rows
    settings = inference_config(cfg.inference_preset) | {"FEATURE_SHIFT_METHOD": None}

    def closed_fit(X_fit: np.ndarray, y_fit: np.ndarray) -> Any:
        stock = make_regressor(
            path, n_estimators=cfg.n_estimators, random_state=cfg.seed, device=cfg.device, inference_config=settings
        )
        return retrofit(stock.fit(X_fit, y_fit), "o_closed")

    closed = closed_fit(X, y)
    sizes = {"n_train": cfg.n_train, "n_features": cfg.n_features}
    game = feature_rows(arch, closed, closed_fit, X, y, X_explain, cfg)
    loo = loo_row(arch, closed, closed_fit, X, y, X_loo, y_loo, cfg)
    return [entry | sizes for entry in [*game, loo]]


def feature_rows(
    arch: str,
    closed: Any,
    closed_fit: Callable,
    X: np.ndarray,
    y: np.ndarray,
    X_explain: np.ndarray,
    cfg: ExplainScaleConfig,
) -> list[dict[str, Any]]:
    """The `values`, `SV`, `k-SII` and `invariance` rows."""
    coalitions_KF = all_coalitions(cfg.n_features)
    present = [keep for keep in coalitions_KF if keep.any()]
    ours = lambda: values(closed, X_explain, coalitions_KF)  # noqa: E731
    refits = lambda: [closed_fit(X[:, keep], y).predict(X_explain[:, keep]) for keep in present]  # noqa: E731
    first, times = _timed({"ours": ours, "refit": refits}, cfg.rounds, cfg.device)
    ours_KR, refit_KR = first["ours"], np.array(first["refit"])
    scale = float(np.max(np.abs(closed.predict(X_explain))))
    timing = _timing(times, cfg.rounds)
    nonempty = coalitions_KF.any(axis=1)
    reference_KR = ours_KR.copy()  # v(∅) shared: a refit cannot fit an empty table
    reference_KR[nonempty] = refit_KR
    rows = [
        _row(arch, "values", n_rows=len(X_explain), n_evaluations=len(present), **timing)
        | {"max_rel_diff": float(np.max(np.abs(ours_KR[nonempty] - refit_KR))) / scale}
    ]
    lookup = {tuple(keep): k for k, keep in enumerate(coalitions_KF)}
    refit_game = lambda asked: reference_KR[[lookup[tuple(keep)] for keep in asked]]  # noqa: E731
    for index, max_order in INDICES.items():
        mine = shapley(closed, X_explain, index=index, max_order=max_order)
        theirs = explain(refit_game, cfg.n_features, None, index, max_order)
        diff = np.max(np.abs(as_array(mine, cfg.n_features) - as_array(theirs, cfg.n_features))) / scale
        extra = {}
        if index == "SV":
            gap = mine.sum(axis=1) - (ours_KR[-1] - ours_KR[0])
            extra = {"efficiency_rel": float(np.max(np.abs(gap))) / scale}
        rows.append(_row(arch, index, n_rows=len(X_explain), n_evaluations=len(present), max_rel_diff=diff, **extra))
    rows.append(
        _row(
            arch,
            "invariance",
            n_rows=len(X_explain),
            max_rel_diff=_invariance(closed, X_explain, coalitions_KF, ours_KR, cfg) / scale,
        )
    )
    return rows


def _invariance(
    closed: Any, X_explain: np.ndarray, coalitions_KF: np.ndarray, ours_KR: np.ndarray, cfg: ExplainScaleConfig
) -> float:
    """The largest |v(S) with the features outside S redrawn − v(S)|: every coalition's rows, their
    outside features redrawn, stacked as query rows of one call (query rows do not see each other)."""
    K, R = len(coalitions_KF), len(X_explain)
    redrawn = np.random.default_rng(cfg.seed + 1).normal(size=(K, R, cfg.n_features))
    mixed_KRF = np.where(coalitions_KF[:, None, :], X_explain[None], redrawn)
    moved_KKR = values(closed, mixed_KRF.reshape(K * R, -1), coalitions_KF).reshape(K, K, R)
    return float(np.max(np.abs(moved_KKR[np.arange(K), np.arange(K)] - ours_KR)))


def loo_row(
    arch: str,
    closed: Any,
    closed_fit: Callable,
    X: np.ndarray,
    y: np.ndarray,
    X_query: np.ndarray,
    y_query: np.ndarray,
    cfg: ExplainScaleConfig,
) -> dict[str, Any]:
    """The `LOO` row: leave-one-out values of every training row, ours against refits without each."""

    def refits() -> np.ndarray:
        def loss(keep: np.ndarray) -> float:
            return float(((closed_fit(X[keep], y[keep]).predict(X_query) - y_query) ** 2).mean())

        full = loss(np.ones(len(X), dtype=bool))
        return np.array([loss(np.arange(len(X)) != i) - full for i in range(len(X))])

    first, times = _timed(
        {"ours": lambda: leave_one_out(closed, X_query, y_query), "refit": refits}, cfg.rounds, cfg.device
    )
    ours, theirs = first["ours"], first["refit"]
    return _row(
        arch,
        "LOO",
        n_rows=len(X_query),
        n_evaluations=len(X),
        max_rel_diff=float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs))),
        rank_corr=float(spearmanr(ours, theirs).statistic),
        **_timing(times, cfg.rounds),
    )


def _timed(
    fns: dict[str, Callable[[], Any]], rounds: int, device: str
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """(each callable's result in the first round, seconds per round on `device`'s clock,
    `device_clock`: CPU seconds on the CPU): `rounds` interleaved
    rounds with no warm-up call (the refits are dozens of fits; ours is warm from the first fit)."""
    first: dict[str, Any] = {}

    def keeping(name: str, fn: Callable[[], Any]) -> Callable[[], None]:
        return lambda: first.setdefault(name, fn())

    kept = {name: keeping(name, fn) for name, fn in fns.items()}
    return first, interleaved_times(kept, rounds, clock=device_clock(device, time.process_time), warmup=False)


def _timing(times: dict[str, list[float]], rounds: int) -> dict[str, float]:
    median, low, high = spread(paired_ratios(times, "ours")["refit"])
    return {
        "ours_seconds": spread(times["ours"])[0],
        "refit_seconds": spread(times["refit"])[0],
        "speedup": median,
        "speedup_min": low,
        "speedup_max": high,
        "rounds": rounds,
    }


def _row(arch: str, quantity: str, **values_: Any) -> dict[str, Any]:
    """A row: `values_` in their columns, NaN in the others (measured unless they say otherwise)."""
    return (
        dict.fromkeys(COLUMNS, np.nan)
        | {"arch": arch, "quantity": quantity, "status": "measured", "reason": ""}
        | values_
    )
