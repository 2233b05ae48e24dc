"""The scale check's memory: peak and clone memory of a variant, each probed in a fresh process."""

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from tabpfn import TabPFNRegressor

from benchmarks.scale.config import ScaleConfig, fitted
from benchmarks.scale.rows import BASELINE
from benchmarks.tools.memory import make_rss_track_live_memory, peak_growth_mib, rss_mib
from retrofit.measure.timing import torch_threads
from retrofit.patching import retrofit


def memory_probe(path: Path, variant: str, cfg: ScaleConfig) -> dict[str, float]:
    """`probe` of `variant` in a fresh process (spawned, so no memory of this one is counted)."""
    args = (str(path), variant, cfg.n_train, cfg.n_test, cfg.n_features, cfg.n_estimators, cfg.threads, cfg.seed)
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(probe, *args).result()


def probe(
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


def weight_mib(regressor: TabPFNRegressor) -> float:
    """MiB of the parameters and buffers of the regressor's models."""
    tensors = [t for model in regressor.models_ for t in (*model.parameters(), *model.buffers())]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20
