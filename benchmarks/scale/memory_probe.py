"""The scale check's memory: peak and clone memory of a variant.

On the CPU a probe measures resident memory (`benchmarks.tools.resident_memory`) in a fresh process;
on CUDA the memory the caching allocator hands out (`torch.cuda.memory_allocated`, its peak
`max_memory_allocated`), in the calling process."""

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from tabpfn import TabPFNRegressor

from benchmarks.scale.scale_rows import BASELINE
from benchmarks.scale.scale_settings import ScaleConfig, fitted
from benchmarks.tools.resident_memory import make_rss_track_live_memory, peak_growth_mib, rss_mib
from retrofit.measure.timing import torch_threads
from retrofit.patching import retrofit


def memory_probe(
    path: Path,
    variant: str,
    cfg: ScaleConfig,
    size: tuple[int, int, int],
    memory_saving: bool = False,
    chunk_cells: int | None = None,
) -> dict[str, Any]:
    """`probe` of `variant` on the table `size` (n_train, n_test, n_features); `memory_saving` forces
    tabpfn's memory saving, `chunk_cells` sets the host's `inference_chunk_cells` (None: tabpfn's).
    On the CPU in a fresh process (spawned, so no memory of this one is counted in its resident
    memory); on CUDA in this one: the allocator's peak is reset for the probed call and counts
    only what is allocated beyond what was allocated before it."""
    args = (str(path), variant, *size, cfg.n_estimators, cfg.threads, cfg.seed, cfg.device, memory_saving, chunk_cells)
    if cfg.device == "cuda":
        return probe(*args)
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(probe, *args).result()


def probe(
    path: str,
    variant: str,
    n_train: int,
    n_test: int,
    n_features: int,
    n_estimators: int,
    threads: int,
    seed: int,
    device: str = "cpu",
    memory_saving: bool = False,
    chunk_cells: int | None = None,
) -> dict[str, Any]:
    """In this (fresh) process: the peak memory growth of one predict by `variant` (the stock model
    for baseline), the memory that a second retrofit of `variant` adds (the first one loads the
    adapters), the model's weight MiB and the predictions (of the probed predict). `chunk_cells`:
    the fitted models' `inference_chunk_cells` (tabpfn_v3's chunked inference: cells per chunk of
    rows of the stages before the in-context blocks; a retrofit's clone keeps it)."""
    cuda = device == "cuda"
    if not cuda:
        make_rss_track_live_memory()
    now_mib, peak_of = (_cuda_mib, _cuda_peak_growth_mib) if cuda else (rss_mib, peak_growth_mib)
    with torch_threads(threads):
        overrides = {"device": device, "memory_saving_mode": memory_saving}
        regressor, X_test = fitted(Path(path), n_train, n_test, n_features, n_estimators, seed, **overrides)
        for model in regressor.models_ if chunk_cells is not None else ():
            model.inference_chunk_cells = chunk_cells
        first = retrofit(regressor, variant)
        before = now_mib()
        second = retrofit(regressor, variant)
        clone = now_mib() - before
        del second
        model = regressor if variant == BASELINE else first
        predictions = {}
        peak = peak_of(lambda: predictions.setdefault("y", model.predict(X_test)))
    return {"predict_peak_mib": peak, "clone_mib": clone, "weight_mib": weight_mib(regressor), **predictions}


def _cuda_mib() -> float:
    """MiB the CUDA caching allocator has handed out now."""
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated() / 2**20


def _cuda_peak_growth_mib(fn) -> float:
    """Peak growth (MiB) of allocated CUDA memory during one call of fn, its result included."""
    before = _cuda_mib()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() / 2**20
    del out
    return peak - before


def weight_mib(regressor: TabPFNRegressor) -> float:
    """MiB of the parameters and buffers of the regressor's models."""
    tensors = [t for model in regressor.models_ for t in (*model.parameters(), *model.buffers())]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20
