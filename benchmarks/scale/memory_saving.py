"""The scale check's memory-saving row: o_closed against the stock model, both under tabpfn's
forced memory saving and its chunked inference in chunks of `memory_saving_chunk_cells` cells, on
the (large) `memory_saving_table`."""

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale.memory_probe import memory_probe
from benchmarks.scale.scale_rows import BASELINE, MEMORY_SAVING, row
from benchmarks.scale.scale_settings import ScaleConfig

UNCHUNKED = 2**62
"""An `inference_chunk_cells` no table reaches: the stages before the blocks in one chunk."""


def memory_saving_row(arch: str, path: Path, cfg: ScaleConfig) -> dict[str, Any]:
    """Peak predict memory of o_closed / of the stock model, each probed (`memory_probe`) with
    `memory_saving_mode=True` and `inference_chunk_cells=memory_saving_chunk_cells` (tabpfn chunks
    the stock model; o_closed runs in the same chunks, `retrofit.adapters.chunks` and
    `OClosedTabPFNV3.row_chunk_size`), and the largest difference of that o_closed prediction from
    an unchunked one (a third probe), relative to its scale."""
    size = tuple(cfg.memory_saving_table)
    cells = cfg.memory_saving_chunk_cells
    stock = memory_probe(path, BASELINE, cfg, size, memory_saving=True, chunk_cells=cells)
    chunked = memory_probe(path, "o_closed", cfg, size, memory_saving=True, chunk_cells=cells)
    unchunked = memory_probe(path, "o_closed", cfg, size, memory_saving=False, chunk_cells=UNCHUNKED)
    diff = float(np.max(np.abs(chunked["y"] - unchunked["y"])) / np.max(np.abs(unchunked["y"])))
    n_train, n_test, n_features = size
    return row(
        arch,
        MEMORY_SAVING,
        n_train=n_train,
        n_test=n_test,
        n_features=n_features,
        memory_ratio=chunked["predict_peak_mib"] / stock["predict_peak_mib"],
        max_rel_diff=diff,
        weight_mib=stock["weight_mib"],
    )
