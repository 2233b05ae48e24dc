"""From a raw table to the arrays one case feeds TabPFN: clean, check, split 70/30 by seed, encode.

Contract, in order:
0. Every column has a name, and no name appears twice (`check_column_names`).
1. `drop` columns are removed (each must exist).
2. Rows whose target is missing are dropped, counted (`Table.n_missing_target`) and logged.
3. At least `MIN_ROWS` rows remain; the target must be finite, not constant and within the scales
   tabpfn standardises exactly (`check_target_scale`); features must not hold ±inf (NaN is fine;
   any finite scale is fine: tabpfn's own feature preprocessing is scale-free).
4. `max_rows` subsamples rows with the case seed; the fit's work (fitted rows × rows × features)
   must be within `retrofit.bounds.max_work` (`check_work`), checked before anything is encoded.
5. Split: `sklearn.model_selection.train_test_split(test_size, random_state=seed)`.
6. Categorical columns (text/bool/category dtypes, plus those named in `categorical`) are
   ordinal-encoded with categories learned on the training rows only (sorted); a level seen only
   in the test rows, and a missing value, become NaN. Their indices go to TabPFN as
   `categorical_features_indices`. Missing numeric values stay NaN: TabPFN handles NaN itself.
"""

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OrdinalEncoder

from retrofit.bounds import WORK_ENV, fit_work, max_work
from retrofit.data.csv_file import missing_target
from retrofit.data.spec import DatasetSpec
from retrofit.errors import DatasetError, RetrofitError, listing

log = logging.getLogger(__name__)

# Fewest usable rows a split accepts: 7 train rows and 3 test rows at test_size 0.3.
MIN_ROWS = 10
MAX_SEED = 2**32 - 1
"""The largest seed: the split and the regressor take it as a numpy / sklearn random state."""
TARGET_SCALE = (1e-12, 1e150)
"""(smallest nonzero spread, largest magnitude) of a target tabpfn standardises exactly (`check_target_scale`)."""


@dataclass(frozen=True)
class Table:
    """A cleaned table: features (columns as in the source), finite target, categorical names."""

    name: str
    X: pd.DataFrame
    y: pd.Series
    categorical: tuple[str, ...]
    n_missing_target: int


@dataclass(frozen=True)
class Split:
    """One seeded train/test split, features encoded as float64 (rows × features)."""

    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    categorical_indices: tuple[int, ...]


def _categorical_columns(spec: DatasetSpec, X: pd.DataFrame) -> tuple[str, ...]:
    unknown = [c for c in spec.categorical if c not in X.columns]
    if unknown:
        raise DatasetError(
            f"dataset {spec.name!r}: categorical columns {listing(unknown)} are not features; "
            f"features: {listing(X.columns)}"
        )
    return tuple(c for c in X.columns if is_categorical(X[c]) or c in spec.categorical)


def is_categorical(column: pd.Series) -> bool:
    """Whether step 6 encodes `column` as categorical whatever the spec says: text, bool or category dtype."""
    return not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)


def check_column_names(dataset: str, names: Sequence[object], where: str = "the table") -> None:
    """Step 0 of the module contract: DatasetError for a column without a name (None, NaN, blank)
    or a name used twice. A reader that renames such columns (pandas makes `y, y` into `y, y.1`
    and a blank into `Unnamed: 0`) would otherwise turn a copied target into a leaking feature."""
    unnamed = [i for i, name in enumerate(names) if name is None or name != name or not str(name).strip()]  # NaN != NaN
    if unnamed:
        raise DatasetError(
            f"dataset {dataset!r}: {where} has columns without a name, at positions {listing(unnamed)} (0-based); "
            "a CSV written with its index has one (write it with index=False), otherwise name every column"
        )
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise DatasetError(
            f"dataset {dataset!r}: {where} uses column names more than once: {listing(repeated)}; the copies would "
            "be renamed (y -> y.1) and a copied target would leak into the features. Rename or remove the copies"
        )


def check_rows(dataset: str, n_rows: int) -> None:
    """DatasetError unless `n_rows` usable rows can be split (`MIN_ROWS`)."""
    if n_rows < MIN_ROWS:
        raise DatasetError(f"dataset {dataset!r}: {n_rows} usable rows; a train/test split needs at least {MIN_ROWS}")


def check_work(table: Table, X: pd.DataFrame, n_fitted: int) -> None:
    """DatasetError, before any encoding or fit, when one fit on `n_fitted` of the rows `X` of `table`
    is over `retrofit.bounds.max_work`: TabPFN attends from each row to every fitted row in each
    feature column, so the work is fitted rows × rows × features (a categorical column is one column
    of codes however many levels it has; the message counts them, a text id column being the usual
    cause of a table that large). It names the work, the bound, and the ways out."""
    bound, n_features = max_work(), X.shape[1]
    work = fit_work(n_fitted, len(X), n_features)
    if work <= bound:
        return
    levels = int(X[list(table.categorical)].nunique().sum()) if table.categorical else 0
    fitting = math.isqrt(bound * len(X) // (n_fitted * n_features))  # rows whose fit is within the bound
    fewer = (
        f"keep at most {fitting} rows (a sweep's dataset.max_rows={fitting}), drop features, or raise the bound"
        if fitting >= MIN_ROWS
        else f"no split of {MIN_ROWS} rows or more is within it: raise the bound"
    )
    raise DatasetError(
        f"dataset {table.name!r}: one fit on {n_fitted} of {len(X)} rows × {n_features} features "
        f"({len(table.categorical)} categorical, {levels} levels) is {work:.2g} units of work (fitted rows × rows "
        f"× features), over the bound of {bound:.2g} ({WORK_ENV}): {fewer}: {WORK_ENV}={work}"
    )


def check_target_scale(y: np.ndarray, what: str, error: type[RetrofitError] = RetrofitError) -> None:
    """`error` "<what> ..." for a finite target outside the scales tabpfn standardises exactly
    (`TARGET_SCALE`): its largest magnitude above the upper bound (tabpfn's `np.std` squares the
    target and overflows near 1e154: predictions become NaN), or a spread (standard deviation) below
    the lower bound but not zero (tabpfn adds 1e-20 to the spread it divides by, which at a spread
    of 1e-30 makes every prediction the training mean). Within the bounds the relative RMSE is that
    of the same data at unit scale to 1e-9."""
    low, high = TARGET_SCALE
    largest = float(np.max(np.abs(y))) if len(y) else 0.0
    if largest > high:
        raise error(
            f"{what} reaches {largest:.3g}; tabpfn standardises targets only up to {high:g} in magnitude: "
            "rescale the target (divide it by a power of ten) or model its logarithm"
        )
    spread = float(np.std(y / largest)) * largest if largest > 0 else 0.0  # y**2 would underflow at 1e-300
    if 0 < spread < low:
        raise error(
            f"{what} has a spread (standard deviation) of {spread:.3g}; tabpfn adds 1e-20 to the spread, which "
            f"distorts predictions below {low:g}: multiply the target by a power of ten"
        )


def clean(frame: pd.DataFrame, spec: DatasetSpec) -> Table:
    """Steps 0–3 of the module contract; raise DatasetError naming the column and the fix."""
    check_column_names(spec.name, list(frame.columns))
    if spec.target not in frame.columns:
        raise missing_target(spec.name, spec.target, list(frame.columns))
    missing_drop = [c for c in spec.drop if c not in frame.columns]
    if missing_drop:
        raise DatasetError(
            f"dataset {spec.name!r}: cannot drop {listing(missing_drop)}: no such columns; "
            f"columns: {listing(frame.columns)}"
        )
    frame = frame.drop(columns=list(spec.drop))
    try:
        y = pd.to_numeric(frame[spec.target]).astype("float64")
    except (ValueError, TypeError):
        raise DatasetError(
            f"dataset {spec.name!r}: target {spec.target!r} is not numeric; regression needs a numeric target"
        ) from None
    has_target = y.notna()
    n_missing = int((~has_target).sum())
    if n_missing:
        log.info("%s: dropped %d of %d rows without target %r", spec.name, n_missing, len(frame), spec.target)
    frame, y = frame[has_target], y[has_target]
    if not np.isfinite(y.to_numpy()).all():
        raise DatasetError(f"dataset {spec.name!r}: target {spec.target!r} holds ±inf; remove or fix those rows")
    check_rows(spec.name, len(y))
    if y.nunique() < 2:
        raise DatasetError(
            f"dataset {spec.name!r}: target {spec.target!r} is constant; RMSE deltas would be meaningless"
        )
    check_target_scale(y.to_numpy(), f"dataset {spec.name!r}: target {spec.target!r}", DatasetError)
    X = frame.drop(columns=[spec.target])
    if X.shape[1] == 0:
        raise DatasetError(f"dataset {spec.name!r}: no feature columns left after dropping {listing(spec.drop)}")
    categorical = _categorical_columns(spec, X)
    numeric = X.drop(columns=list(categorical))
    infinite = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(dtype="float64", na_value=np.nan)).any()]
    if infinite:
        raise DatasetError(
            f"dataset {spec.name!r}: features {listing(infinite)} hold ±inf; "
            "replace them with NaN (missing) or drop them"
        )
    return Table(spec.name, X.reset_index(drop=True), y.reset_index(drop=True), categorical, n_missing)


def check_seed(seed: object) -> None:
    """RetrofitError naming `seed` unless it is an integer in [0, `MAX_SEED`]."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= MAX_SEED:
        raise RetrofitError(f"seed {seed!r} must be an integer in [0, {MAX_SEED}] (a numpy random state), e.g. 0")


def split(table: Table, seed: int, test_size: float = 0.3, max_rows: int | None = None) -> Split:
    """Steps 4–6 of the module contract for one seed; RetrofitError when `seed` is not an integer
    in [0, `MAX_SEED`] (what numpy takes as a random state), DatasetError when `test_size` is not
    a number in (0, 1)."""
    check_seed(seed)
    if isinstance(test_size, bool) or not isinstance(test_size, Real) or not 0 < test_size < 1:
        raise DatasetError(
            f"dataset {table.name!r}: test_size must be the share of rows held out, a number in (0, 1) (e.g. "
            f"test_size=0.3), got {test_size!r}"
        )
    X, y = table.X, table.y
    if max_rows is not None and len(X) > max_rows:
        keep = np.sort(np.random.default_rng(seed).choice(len(X), size=max_rows, replace=False))
        X, y = X.iloc[keep], y.iloc[keep]
    check_rows(table.name, len(X))
    n_test = math.ceil(test_size * len(X))  # how train_test_split sizes the test side
    if len(X) - n_test < 2 or n_test < 1:
        raise DatasetError(
            f"dataset {table.name!r}: test_size={test_size} leaves {len(X) - n_test} of its {len(X)} rows for training "
            f"and {n_test} for testing; choose a test_size that leaves at least 2 for training and 1 for testing "
            "(e.g. test_size=0.3)"
        )
    check_work(table, X, len(X) - n_test)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=seed)
    if y_train.nunique() < 2:
        raise DatasetError(f"dataset {table.name!r}: the target is constant on the training rows of seed {seed}")
    if (X_train.nunique(dropna=False) < 2).all():  # tabpfn drops constant features and then refuses
        raise DatasetError(
            f"dataset {table.name!r}: every feature is constant on the training rows of seed {seed}, so TabPFN has "
            "nothing to predict from; add a feature that varies"
        )
    X_train, X_test = _encoded(table.categorical, X_train, X_test)
    columns = tuple(X.columns)
    return Split(
        X_train=X_train,
        X_test=X_test,
        y_train=y_train.to_numpy(dtype="float64"),
        y_test=y_test.to_numpy(dtype="float64"),
        feature_names=columns,
        categorical_indices=tuple(columns.index(c) for c in table.categorical),
    )


def whole(table: Table) -> Split:
    """Every row of `table` as the training rows of one fit (step 6 on all rows; no test rows): what
    a model explaining the table's own rows is fitted on."""
    check_rows(table.name, len(table.X))
    check_work(table, table.X, len(table.X))
    (X,) = _encoded(table.categorical, table.X)
    columns = tuple(table.X.columns)
    return Split(
        X_train=X,
        X_test=X[:0],
        y_train=table.y.to_numpy(dtype="float64"),
        y_test=np.empty(0),
        feature_names=columns,
        categorical_indices=tuple(columns.index(c) for c in table.categorical),
    )


def _encoded(categorical: Sequence[str], fit: pd.DataFrame, *others: pd.DataFrame) -> list[np.ndarray]:
    """`fit` and `others` as float64 arrays, the `categorical` columns ordinal-encoded with the
    categories of `fit` (step 6)."""
    frames = [frame.copy() for frame in (fit, *others)]
    cat = list(categorical)
    if cat:
        encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan, encoded_missing_value=np.nan)
        frames[0][cat] = encoder.fit_transform(frames[0][cat].astype("object"))
        for frame in frames[1:]:
            frame[cat] = encoder.transform(frame[cat].astype("object"))
    return [frame.to_numpy(dtype="float64", na_value=np.nan) for frame in frames]
