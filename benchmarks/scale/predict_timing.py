"""The scale check's time ratios: interleaved predict times of the stock model and each retrofit."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tabpfn import TabPFNRegressor

from benchmarks.scale.scale_rows import BASELINE
from benchmarks.scale.scale_settings import ScaleConfig, fitted
from retrofit.errors import RetrofitError
from retrofit.measure.timing import interleaved_times, paired_ratios, spread
from retrofit.patching import retrofit


def predict_timing(
    path: Path, cfg: ScaleConfig, size: tuple[int, int, int], variants: list[str], reasons: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """({"ratios": variant -> its time / the stock time per round, "stock_seconds": the stock
    model's median seconds, "models": name -> the model, "X_test": its test rows}, `reasons` plus
    each variant whose retrofit was refused), over `cfg.rounds` interleaved rounds of one predict
    each on the table `size` (one fitted regressor, on `cfg.device`; on CUDA each call ends with
    `torch.cuda.synchronize`, so a round times the device's work, not its queueing)."""
    regressor, X_test = fitted(path, *size, cfg.n_estimators, cfg.seed, device=cfg.device)
    models: dict[str, TabPFNRegressor] = {BASELINE: regressor}
    reasons = dict(reasons)
    for v in variants:
        try:
            models[v] = retrofit(regressor, v)
        except RetrofitError as err:
            reasons[v] = str(err)
    fns: dict[str, Callable[[], object]] = {name: _synchronised(m, X_test, cfg.device) for name, m in models.items()}
    times = interleaved_times(fns, cfg.rounds)
    stock_seconds = spread(times[BASELINE])[0]
    timing = {"ratios": paired_ratios(times, BASELINE), "stock_seconds": stock_seconds, "models": models}
    return timing | {"X_test": X_test}, reasons


def _synchronised(model: TabPFNRegressor, X_test: Any, device: str) -> Callable[[], object]:
    """One predict of `model`, then (on CUDA) a wait for the device to finish."""

    def call() -> object:
        out = model.predict(X_test)
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    return call
