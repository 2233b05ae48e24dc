"""Where a variant's extra predict time goes: the ops whose CPU time grew most from stock to patched."""

from pathlib import Path

import pandas as pd

from benchmarks.scale.scale_rows import BASELINE
from benchmarks.scale.scale_settings import ScaleConfig, fitted
from benchmarks.scale.verdicts import worst_time_misses
from retrofit.hosts.checkpoint import PUBLISHED_FORMATS
from retrofit.measure.timing import torch_threads
from retrofit.patching import retrofit


def miss_profiles(table: pd.DataFrame, cfg: ScaleConfig, folder: Path) -> list[str]:
    """`op_profile` of each architecture's worst time miss (`worst_time_misses`), on the host
    `benchmarks.scale.scale_table.scale_table` wrote into `folder`."""
    lines = []
    for arch, variant in worst_time_misses(table).items():
        path = Path(folder) / arch / PUBLISHED_FORMATS[arch].file_name
        lines += [f"{arch} {variant}: where the time goes", *op_profile(path, variant, cfg)]
    return lines


def op_profile(path: Path, variant: str, cfg: ScaleConfig, top: int = 8) -> list[str]:
    """Where a variant's extra predict time goes: one profiled predict of the stock model and one
    of `variant` (after a warm-up each) on the first timed table, on `cfg.device`; the `top` ops
    whose self CPU time grew most, with both times, and the totals."""
    from torch.profiler import ProfilerActivity, profile

    with torch_threads(cfg.threads):
        regressor, X_test = fitted(path, *cfg.sizes[0], cfg.n_estimators, cfg.seed, device=cfg.device)
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
