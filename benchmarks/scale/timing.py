"""The scale check's time ratios: interleaved predict times of the stock model and each retrofit."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabpfn import TabPFNRegressor

from benchmarks.scale.config import ScaleConfig, fitted
from benchmarks.scale.rows import BASELINE
from retrofit.errors import RetrofitError
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.patching import retrofit


def predict_timing(
    path: Path, cfg: ScaleConfig, variants: list[str], reasons: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """({"ratios": variant -> its time / the stock time per round, "stock_seconds": the stock
    model's median seconds}, `reasons` plus each variant whose retrofit was refused), over
    `cfg.rounds` interleaved rounds of one predict each on the timed table (one fitted regressor)."""
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
