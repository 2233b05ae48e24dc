"""The scale check's rows: the columns of `results/scale.csv` and a row of each kind."""

from typing import Any

import numpy as np

COLUMN_DOCS = {
    "arch": ("label", "tabpfn architecture at its default size (see `benchmarks.scale`)"),
    "variant": (
        "label",
        "retrofit variant, `baseline` (the stock model), `predict_many` or `o_closed_memory_saving` "
        "(o_closed against the stock model, both under tabpfn's forced memory saving and chunked inference)",
    ),
    "status": ("label", "`measured` or `refused`"),
    "device": ("label", "where the row was measured: `cpu` or the CUDA device's name (`torch.cuda.get_device_name`)"),
    "n_train": ("count", "train rows of the row's table"),
    "n_test": ("count", "test rows of the row's table"),
    "n_features": ("count", "feature columns of the row's table"),
    "time_ratio": ("ratio", "median per-round patched / stock predict seconds (predict_many: / sequential)"),
    "time_ratio_min": ("ratio", "smallest per-round time ratio"),
    "time_ratio_max": ("ratio", "largest per-round time ratio"),
    "ops_per_predict": ("count", "torch (aten) operations one predict dispatches (`benchmarks.tools.op_count`)"),
    "ops_ratio": ("ratio", "operations per predict, patched / stock (a device-independent proxy for kernel launches)"),
    "memory_ratio": (
        "ratio",
        "peak memory of one patched predict / of one stock predict: resident-memory growth on the CPU, "
        "`torch.cuda.max_memory_allocated` growth on CUDA (memory-saving row: both with memory saving forced on "
        "and chunked inference in chunks of `memory_saving_chunk_cells` cells)",
    ),
    "clone_memory_ratio": ("ratio", "resident memory one more retrofit adds / the model's weight bytes"),
    "audit_rows_rel": ("relative change", "largest relative prediction change when absent train rows are inserted"),
    "audit_columns_rel": ("relative change", "the same when absent feature columns are inserted"),
    "max_rel_diff": (
        "relative change",
        "predict_many row: largest difference from `predict`; memory-saving row: from the unchunked o_closed "
        "predict; relative to the prediction scale",
    ),
    "rounds": ("count", "interleaved timing rounds"),
    "stock_seconds": ("s", "the stock model's median predict seconds (predict_many row: sequential's)"),
    "weight_mib": ("MiB", "the model's parameters and buffers"),
    "reason": ("text", "why a refused row could not run (first line); empty if measured"),
    "batched_tables": ("count", "of the predict_many tables, those run in padded shared forwards"),
    "load_start": ("load", "1-minute load average at the architecture's start"),
    "load_end": ("load", "1-minute load average at its end"),
}
"""Column -> (unit, meaning) of `results/scale.csv` (one row per architecture x variant), in order."""
COLUMNS = tuple(COLUMN_DOCS)

BASELINE, PREDICT_MANY, MEMORY_SAVING = "baseline", "predict_many", "o_closed_memory_saving"
"""The `variant` of the stock model's row, of the predict_many row and of the row of o_closed under
tabpfn's forced memory saving (`benchmarks.scale.memory_saving`)."""


def row(arch: str, variant: str, **values: Any) -> dict[str, Any]:
    """A measured row: `values` in their columns, NaN in the others."""
    measured = dict.fromkeys(COLUMNS, np.nan) | {"arch": arch, "variant": variant, "status": "measured", "reason": ""}
    return measured | values


def refused(arch: str, variant: str, reason: str) -> dict[str, Any]:
    """The row of what could not run, with its reason (first line)."""
    return row(arch, variant, status="refused", reason=reason.splitlines()[0])
