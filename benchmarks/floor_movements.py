"""A host's noise floor: how far its own stock predictions move under changes that should not matter.

For one fitted case (`retrofit.fitting`), each source computes the stock host's test RMSE twice,
once as the harness runs it and once under a change that leaves the problem the same:

- `input_ulp`: every numeric feature cell (train and test) times (1 + 1e-7) or (1 - 1e-7),
  alternating over each column's distinct values, in both phases (`perturb_inputs`): last-bit
  changes, what another CPU's BLAS kernel makes of the same numbers;
- `threads`: torch running on 1 thread, then on 2 (the same fitted regressor);
- `chunked`: the test rows predicted in `CHUNKS` consecutive chunks, then all at once;
- `precision`: the host refitted with `precision="auto"`, tabpfn's default (its autocast where
  tabpfn finds it: float16 on CUDA, bfloat16 on CPUs with native bf16, else float32;
  `retrofit.fitting`), against float32;
- `device`: the host refitted on the other device of CPU and CUDA (measured only where CUDA
  exists; elsewhere the source is absent and `measure` says so in one line);
- `draw`: for a host whose predictions depend on a random draw at inference (a v2-family model
  without stored column embeddings draws them on its device at every forward:
  `retrofit.hosts.column_embeddings.draws_on_device`), the same fitted host fed the CPU draws of
  each of `OTHER_DRAWS` instead (what another device's generator amounts to); absent for a host
  that draws nothing, such as every shipped host.

Every case runs on the job's `device`, and every row says which (`device`, its model name on CUDA).
A movement is `100 * |RMSE(changed) - RMSE(reference)| / RMSE(reference)`, in % of the RMSE. A
mean delta smaller than its host's floor (the largest movement over every source and case,
`retrofit.measure.floor_table.read_floors`) says nothing the host's own numerics would not say.
"""

import dataclasses
import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from retrofit.data import DatasetSpec, Split
from retrofit.fitting import fit_host, load_split
from retrofit.hosts.column_embeddings import LAYER, ColumnEmbeddings, StoredColumnEmbedding, draws_on_device
from retrofit.hosts.device import device_label, is_cuda
from retrofit.measure.floor_table import COLUMNS
from retrofit.metrics import rmse

log = logging.getLogger(__name__)

ULP_REL = 1e-7
"""The relative size of an `input_ulp` perturbation (about one float32 ulp)."""
CHUNKS = 4
"""How many `predict` calls the `chunked` source splits the test rows into (each call runs the whole
training context again, so more chunks cost more forwards, not more coverage)."""
THREADS = (1, 2)
"""The torch thread counts the `threads` source compares."""
OTHER_DRAWS = (1, 2, 3)
"""The seeds the `draw` source re-draws a drawing host's column embeddings with."""


def perturb_inputs(data: Split, rel: float = ULP_REL, phase: int = 0) -> Split:
    """`data` with every numeric feature cell multiplied by `1 + rel` or `1 - rel`, alternating over
    each column's distinct values in sorted order (over train and test rows together): `+` where the
    value's rank + `phase` is even. Equal values get the same factor and distinct values keep their
    order (unless two lie within `2 * rel` of each other), so ties and ranks, which quantile views
    read, are untouched: only last bits move. Categorical codes and the target are untouched;
    deterministic; `phase` 1 is the opposite pattern of phase 0."""
    X_RF = np.concatenate([data.X_train, data.X_test])
    factor_RF = np.ones_like(X_RF)
    numeric = [f for f in range(X_RF.shape[1]) if f not in data.categorical_indices]
    for f in numeric:
        _, rank_R = np.unique(X_RF[:, f], return_inverse=True)
        factor_RF[:, f] = np.where((rank_R + phase) % 2 == 0, 1.0 + rel, 1.0 - rel)
    X_RF = X_RF * factor_RF
    N = len(data.X_train)
    return dataclasses.replace(data, X_train=X_RF[:N], X_test=X_RF[N:])


def relative_pct(reference: float, changed: float) -> float:
    """`100 * |changed - reference| / reference`: a movement in % of the reference RMSE."""
    return 100.0 * abs(changed - reference) / reference


Fit = Callable[..., object]
"""`fit(split, **settings)` -> a host regressor fitted on the split's training rows, with the case's
own settings unless `settings` (`device=`, `precision=`) change one."""


def _predict_threads(regressor, X_RF: np.ndarray, threads: int) -> np.ndarray:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return regressor.predict(X_RF)
    finally:
        torch.set_num_threads(before)


def input_ulp(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movements of the RMSE when the inputs are perturbed at `ULP_REL` (both phases), refitted."""
    changed = [perturb_inputs(data, ULP_REL, phase) for phase in (0, 1)]
    return [relative_pct(reference, rmse(c.y_test, fit(c).predict(c.X_test))) for c in changed]


def threads(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movement of the RMSE between predicting on `THREADS[0]` and `THREADS[1]` torch threads."""
    one, two = (rmse(data.y_test, _predict_threads(fitted, data.X_test, n)) for n in THREADS)
    return [relative_pct(one, two)]


def chunked(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movement of the RMSE between predicting the test rows at once and in `CHUNKS` consecutive chunks."""
    pieces = np.concatenate([fitted.predict(X_RF) for X_RF in np.array_split(data.X_test, CHUNKS)])
    return [relative_pct(reference, rmse(data.y_test, pieces))]


def precision(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movement of the RMSE when the host runs as tabpfn runs it by default (`precision="auto"`)."""
    return [relative_pct(reference, rmse(data.y_test, fit(data, precision="auto").predict(data.X_test)))]


def device(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movement of the RMSE between the host fitted on the CPU and on CUDA (the device the case does
    not run on); [] where CUDA is absent."""
    if not torch.cuda.is_available():
        return []
    other = "cpu" if is_cuda(fitted.devices_[0]) else "cuda"
    return [relative_pct(reference, rmse(data.y_test, fit(data, device=other).predict(data.X_test)))]


def draw(fit: Fit, data: Split, reference: float, fitted) -> list[float]:
    """Movements of the RMSE when each model that draws on its device (`draws_on_device`) is fed the
    CPU draws of each of `OTHER_DRAWS` instead (its own layer restored after); [] for a host that
    draws nothing."""
    models = [model for model in fitted.models_ if draws_on_device(model)]
    if not models:
        return []
    layers = [getattr(model, LAYER) for model in models]
    moved = []
    try:
        for seed in OTHER_DRAWS:
            for model, layer in zip(models, layers, strict=True):
                setattr(model, LAYER, StoredColumnEmbedding(layer, ColumnEmbeddings.drawn(seed, layer.in_features, 1)))
            moved.append(relative_pct(reference, rmse(data.y_test, fitted.predict(data.X_test))))
    finally:
        for model, layer in zip(models, layers, strict=True):
            setattr(model, LAYER, layer)
    return moved


SOURCES: dict[str, Callable[[Fit, Split, float, object], list[float]]] = {
    "input_ulp": input_ulp,
    "threads": threads,
    "chunked": chunked,
    "precision": precision,
    "device": device,
    "draw": draw,
}
"""Source name -> its movements (in %) on one case, given the case's fit, its split, the reference
RMSE (all test rows at once, the command's own thread count) and the regressor fitted on the split;
no movement (an empty list) where the source does not apply to the host or the machine."""


def host_digest(path: Path) -> str:
    """sha256 of the host file's bytes, first 16 hex digits."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def case_movements(
    host_path: Path,
    data: Split,
    seed: int,
    n_estimators: int,
    sources: Sequence[str] = tuple(SOURCES),
    device: str = "cpu",
) -> list[dict]:
    """Rows `source, rel_pct` of one case: the host at `host_path` fitted on `data` with
    `random_state=seed` and `n_estimators` members on `device` in float32
    (`retrofit.fitting.fit_host`, the sweep's fit)."""

    def fit(split: Split, **settings):
        return fit_host(
            host_path, split, random_state=seed, n_estimators=n_estimators, **({"device": device} | settings)
        )[0]

    fitted = fit(data)
    reference = rmse(data.y_test, fitted.predict(data.X_test))
    return [{"source": s, "rel_pct": pct} for s in sources for pct in SOURCES[s](fit, data, reference, fitted)]


def measure(
    hosts: dict[str, Path],
    datasets: Iterable[DatasetSpec],
    seeds: Sequence[int],
    n_estimators: int,
    *,
    base_dir: Path,
    sources: Sequence[str] = tuple(SOURCES),
    device: str = "cpu",
) -> pd.DataFrame:
    """Every movement of every host x dataset x seed x source on `device` (resolved: "cpu" or
    "cuda"): columns `host, host_digest, device, dataset, seed, source, rel_pct`. Says in one log
    line when the `device` source is left out for want of CUDA."""
    if "device" in sources and not torch.cuda.is_available():
        log.warning("source 'device' (CPU vs CUDA) not measured: torch sees no CUDA device here")
    digests = {host: host_digest(path) for host, path in hosts.items()}
    label = device_label(device)
    rows = []
    for dataset in datasets:
        for seed in seeds:
            _, data = load_split(dataset, seed, base_dir=base_dir)
            for host, path in hosts.items():
                common = dict(host=host, host_digest=digests[host], device=label, dataset=dataset.name, seed=seed)
                movements = case_movements(path, data, seed, n_estimators, sources, device)
                rows += [{**common, **row} for row in movements]
                log.info("%s: %s seed %d measured", host, dataset.name, seed)
    return pd.DataFrame(rows)


def summarise(movements: pd.DataFrame) -> pd.DataFrame:
    """One row per host x device x source (`COLUMNS`): how many movements, their median and their
    largest (a source with no movement for a host has no row)."""
    grouped = movements.groupby(["host", "host_digest", "device", "source"], sort=False)["rel_pct"]
    summary = grouped.agg(cases="size", median_rel_pct="median", max_rel_pct="max").reset_index()
    return summary[COLUMNS]
