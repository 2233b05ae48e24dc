"""The scale check's rows: the columns of `results/scale.csv` and a row of each kind."""

from typing import Any

import numpy as np

COLUMNS = (
    "arch",
    "variant",
    "status",
    "time_ratio",
    "time_ratio_min",
    "time_ratio_max",
    "memory_ratio",
    "clone_memory_ratio",
    "audit_rows_rel",
    "audit_columns_rel",
    "max_rel_diff",
    "rounds",
    "stock_seconds",
    "weight_mib",
    "reason",
    "batched_tables",
    "load_start",
    "load_end",
)
"""One row per architecture x variant (see `benchmarks.scale`); `status`: measured or refused;
`stock_seconds`: the stock model's median predict seconds (predict_many row: sequential's);
`weight_mib`: the model's parameters and buffers; `batched_tables`: of the predict_many tables,
those run in padded shared forwards (the others ran their own predict); `load_start`,
`load_end`: 1-minute load average at the architecture's start and end."""

BASELINE, PREDICT_MANY = "baseline", "predict_many"
"""The `variant` of the stock model's row and of the predict_many row."""


def row(arch: str, variant: str, **values: Any) -> dict[str, Any]:
    """A measured row: `values` in their columns, NaN in the others."""
    measured = dict.fromkeys(COLUMNS, np.nan) | {"arch": arch, "variant": variant, "status": "measured", "reason": ""}
    return measured | values


def refused(arch: str, variant: str, reason: str) -> dict[str, Any]:
    """The row of what could not run, with its reason (first line)."""
    return row(arch, variant, status="refused", reason=reason.splitlines()[0])
