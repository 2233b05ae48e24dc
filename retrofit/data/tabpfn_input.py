"""What a table handed to tabpfn as it is (a fit or predict in memory, not a dataset's cleaning,
`retrofit.data.prepare`) must not hold, refused before tabpfn sees it: tabpfn's own refusals of
these span several lines or name an `inference_config` the caller never set."""

from typing import Any

import numpy as np
import pandas as pd

from retrofit.errors import RetrofitError, listing


def check_columns(X: Any, what: str, *, transform_dates: bool = False, passthrough_inf: bool = False) -> None:
    """RetrofitError "<what>: ..." naming the first column of the table `X` (array or DataFrame) that
    tabpfn would refuse, with the fix: a name used twice; dates, unless the regressor's
    inference_config has `TRANSFORM_DATES`; ±inf, unless it has `PASSTHROUGH_INF` (inf as a
    missing marker). Other inputs (lists, sparse matrices, not two-dimensional) are left to tabpfn
    and sklearn."""
    if isinstance(X, pd.DataFrame):
        repeated = list(X.columns[X.columns.duplicated()].unique())
        if repeated:
            raise RetrofitError(
                f"{what}: X uses column names more than once: {listing(repeated)}; rename or drop the copies"
            )
        columns = [X.iloc[:, i] for i in range(X.shape[1])]
        dates = [i for i, column in enumerate(columns) if pd.api.types.is_datetime64_any_dtype(column)]
        floats = [i for i, column in enumerate(columns) if pd.api.types.is_float_dtype(column)]
        infinite = [i for i in floats if np.isinf(columns[i].to_numpy("float64", na_value=np.nan)).any()]
    elif isinstance(X, np.ndarray) and X.ndim == 2:
        dates = list(range(X.shape[1])) if X.dtype.kind == "M" else []
        infinite = list(np.flatnonzero(np.isinf(X).any(axis=0))) if X.dtype.kind in "fc" else []
    else:
        return
    if dates and not transform_dates:
        raise RetrofitError(
            f"{what}: column {_label(X, dates[0])} holds dates, which tabpfn refuses: convert it to numbers first, "
            "e.g. days since a start date, (X[c] - X[c].min()).dt.days"
        )
    if infinite and not passthrough_inf:
        raise RetrofitError(
            f"{what}: column {_label(X, infinite[0])} holds ±inf; replace it with NaN (a missing value, which tabpfn "
            "takes)"
        )


def _label(X: Any, i: int) -> str:
    """Column `i` of the table `X` in a message: its name, or its position in an array."""
    return repr(X.columns[i]) if isinstance(X, pd.DataFrame) else f"{i} (0-based)"
