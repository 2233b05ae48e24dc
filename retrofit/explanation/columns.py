"""The frame an explanation returns (and the explain job writes as CSV): its columns, what each
means, and the frame built from shapiq's values."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = ("row", "order", "features", "value", "prediction", "empty_prediction")
"""The columns of `explain`'s frame, in order (`COLUMN_DOCS`)."""
COLUMN_DOCS = {
    "row": (
        "integer",
        "the explained row: its position in the table (0-based, after rows without a target are dropped)",
    ),
    "order": ("count", "1: a feature's Shapley value (with order=2 its k-SII main effect); 2: a pair's k-SII"),
    "features": ("label", "the feature, or the pair `a × b`"),
    "value": ("target units", "its share of prediction − empty_prediction (a row's values sum to that difference)"),
    "prediction": ("target units", "the closed host's prediction for the row, every feature present"),
    "empty_prediction": ("target units", "the prediction with every feature absent (the targets alone)"),
}
"""Column -> (unit, meaning) of `explain`'s frame and the explain job's CSV."""


def values_frame(chosen: list[int], names: Sequence[str], result: Any, order: int, ends: np.ndarray) -> pd.DataFrame:
    """`COLUMNS` of the values `result` (SV: (rows, n) array; k-SII: one InteractionValues per row)
    of the rows `chosen` over the features `names`; `ends` (2, rows): every feature present, none."""
    records = []
    for position, row in enumerate(chosen):
        first = result[position] if order == 1 else result[position].get_n_order_values(1)
        terms = [(1, name, first[i]) for i, name in enumerate(names)]
        if order == 2:
            pairs = result[position].get_n_order_values(2)
            n = len(names)
            terms += [(2, f"{names[i]} × {names[j]}", pairs[i, j]) for i in range(n) for j in range(i + 1, n)]
        records += [
            {
                "row": row,
                "order": k,
                "features": label,
                "value": float(value),
                "prediction": float(ends[0, position]),
                "empty_prediction": float(ends[1, position]),
            }
            for k, label, value in terms
        ]
    return pd.DataFrame(records, columns=list(COLUMNS))
