"""The scale check's predict_many row: o_closed retrofits of tables of different shapes, batched
by `retrofit.predict_many` vs one predict after another."""

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale.scale_rows import PREDICT_MANY, row
from benchmarks.scale.scale_settings import ScaleConfig, fitted
from retrofit.batching import cell_limit, member_inputs, predict_many, shared_buckets
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.patching import retrofit


def predict_many_row(arch: str, path: Path, cfg: ScaleConfig) -> dict[str, Any]:
    """predict_many (with `cfg.max_padding`) over o_closed retrofits of `cfg.tables` vs one predict
    after another: the time ratio per round (median, min, max), how many tables it batched and its
    largest difference from each table's own predict relative to that prediction's scale."""
    pairs = []
    for i, (n_train, n_test, n_features) in enumerate(cfg.tables):
        regressor, X_test = fitted(path, n_train, n_test, n_features, cfg.n_estimators, cfg.seed + i, device=cfg.device)
        pairs.append((retrofit(regressor, "o_closed"), X_test))
    fns = {
        "sequential": lambda: [regressor.predict(X) for regressor, X in pairs],
        PREDICT_MANY: lambda: predict_many(pairs, max_padding=cfg.max_padding),
    }
    times = interleaved_times(fns, cfg.rounds)
    median, low, high = spread(paired_ratios(times, "sequential")[PREDICT_MANY])
    members = [m for i, (regressor, X) in enumerate(pairs) for m in member_inputs(i, regressor, X)]
    buckets = shared_buckets(members, max_padding=cfg.max_padding, max_cells=cell_limit(pairs[0][0]))
    batched = predict_many(pairs, max_padding=cfg.max_padding)
    diff = max(
        float(np.max(np.abs(b - r.predict(X))) / np.max(np.abs(r.predict(X))))
        for b, (r, X) in zip(batched, pairs, strict=True)
    )
    return row(
        arch,
        PREDICT_MANY,
        time_ratio=median,
        time_ratio_min=low,
        time_ratio_max=high,
        max_rel_diff=diff,
        batched_tables=len({m.pair for bucket in buckets for m in bucket}),
        rounds=cfg.rounds,
        stock_seconds=spread(times["sequential"])[0],
    )
