"""`RetrofitRegressor`: a retrofit variant on a host as one scikit-learn estimator.

`fit` fits a stock TabPFNRegressor on the host (`retrofit.hosts.make_regressor`) and retrofits it
(`retrofit.retrofit`, the one path that makes a retrofitted model); `predict` runs the result.
So every refit, clone and fold of a cross-validation or grid search gets the variant.
"""

from collections.abc import Mapping
from typing import Any, Literal, Self

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data
from tabpfn.errors import TabPFNValidationError

from retrofit.bounds import check_fit_work
from retrofit.data.prepare import check_target_scale
from retrofit.data.tabpfn_input import check_columns
from retrofit.errors import RetrofitError, bounded, listing, single_line
from retrofit.hosts import get_path, make_regressor
from retrofit.hosts.locate import checkpoint_argument
from retrofit.patching import retrofit
from retrofit.variants import check_hparams_used, resolve_variant

_AS_TABPFN_TAKES_IT = {"dtype": None, "ensure_all_finite": False}
"""`validate_data` options that check shape and feature names only: tabpfn takes any dtype and NaN."""


class RetrofitRegressor(RegressorMixin, BaseEstimator):
    """A TabPFN regressor on `host` running retrofit `variant`, refitted by every `fit`.

    Parameters are stored as given and validated by `fit` (sklearn convention), all of them before
    anything is fitted: an unknown variant, host or device, a checkpoint `check_checkpoint`
    refuses, `n_estimators` < 1, a bad `random_state`, a bad hyper-parameter or one the variant does not
    use (`Variant.hparams_used`: `tau` on `baseline`) raises RetrofitError,
    and so does a target outside the scales tabpfn standardises exactly
    (`retrofit.data.prepare.check_target_scale`: magnitudes up to 1e150, spreads from 1e-12).

    variant: a built-in variant name (`retrofit/configs/variant/`) or a spec (mapping), as `retrofit.retrofit` takes.
    host: a host by name (`retrofit.hosts.get_path`: a shipped host, or a tabpfn model name such as "v2.5"
        found in tabpfn's model cache); `model_path`, when given, is used instead: a checkpoint file, a
        HuggingFace cache folder or a tabpfn model name (`retrofit.hosts.check_checkpoint`).
    n_estimators, random_state: tabpfn's, with its default seed 0 (as `make_regressor`'s), so every fit of
        a grid search or cross-validation draws the same ensemble and a score moves with the
        hyper-parameters alone; None draws a new seed at each fit.
    device: "auto", "cpu" or "cuda" (`retrofit.hosts.make_regressor`).
    tau, eps_den, eps_mode, compact: the variant's hyper-parameters (`retrofit.variants.HPARAMS`);
        None keeps the variant's own value. A bare number tau is `c` of the calibrated rule
        (tau=1e-2 is {"mode": "calibrated", "c": 1e-2}); tau={"mode": "absolute", "value": 1.0} fixes it.

    Fitted attributes: `regressor_`, the retrofitted TabPFNRegressor (`regressor_.retrofit_report_`
    lists the modules taken over); `n_features_in_` (and `feature_names_in_` for a DataFrame);
    `text_columns_`, the positions of the columns fit saw text in (tabpfn's categoricals);
    `n_fitted_rows_`, the rows fitted. A fit or predict whose work (`retrofit.bounds.fit_work`: fitted
    rows × the rows attending to them, the fitted ones included, × features) is over
    `retrofit.bounds.max_work` is refused before it starts (`check_fit_work`).
    `validate_data` checks the shape and feature names (any dtype, NaN allowed); the inputs reach
    tabpfn as given, so it converts them as it does for a stock regressor (text, categoricals). A
    column that held numbers at fit and holds text at predict is refused naming it (tabpfn reads it
    as numbers and fails on the text), and so are the columns `check_columns` refuses.
    """

    def __init__(
        self,
        variant: str | Mapping[str, Any] = "full_o",
        *,
        host: str = "tiny_v3",
        model_path: str | None = None,
        n_estimators: int = 8,
        random_state: int | None = 0,
        device: Literal["auto", "cpu", "cuda"] = "auto",
        tau: float | Mapping[str, Any] | None = None,
        eps_den: float | None = None,
        eps_mode: Literal["absolute", "relative"] | None = None,
        compact: bool | None = None,
    ):
        self.variant = variant
        self.host = host
        self.model_path = model_path
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.device = device
        self.tau = tau
        self.eps_den = eps_den
        self.eps_mode = eps_mode
        self.compact = compact

    def fit(self, X: Any, y: Any) -> Self:
        """Fit the stock regressor on (X, y) and retrofit it with the variant; returns self."""
        hparams = {"tau": self.tau, "eps_den": self.eps_den, "eps_mode": self.eps_mode, "compact": self.compact}
        hparams = {name: value for name, value in hparams.items() if value is not None}
        variant = resolve_variant(self.variant, **hparams)  # refuses a bad variant before anything is fitted
        check_hparams_used(variant, hparams, "RetrofitRegressor", drop="leave {key} None")
        with checkpoint_argument("model_path"):  # a refused host or checkpoint names this estimator's argument
            path = get_path(self.host) if self.model_path is None else self.model_path
            # make_regressor checks the checkpoint, n_estimators, random_state and device, so fit is the last step
            settings = {"n_estimators": self.n_estimators, "random_state": self.random_state, "device": self.device}
            stock = make_regressor(path, **settings)
        check_columns(X, "RetrofitRegressor.fit")
        try:  # sparse X, one row, unequal lengths: refused in sklearn's words before the fit
            _, y_checked = validate_data(self, X, y, ensure_min_samples=2, **_AS_TABPFN_TAKES_IT)
        except (TypeError, ValueError) as err:
            raise RetrofitError(f"RetrofitRegressor.fit: {single_line(str(err))}") from None
        check_target_scale(_numbers(y_checked), "RetrofitRegressor.fit: y")
        check_fit_work(len(y_checked), len(y_checked), self.n_features_in_, "RetrofitRegressor.fit")
        try:
            fitted = stock.fit(X, y)
        except TabPFNValidationError as err:  # e.g. every feature constant
            raise RetrofitError(f"RetrofitRegressor.fit: {single_line(str(err))}") from None
        self.regressor_ = retrofit(fitted, self.variant, **hparams)
        self.text_columns_ = tuple(_text_cells(X))
        self.n_fitted_rows_ = len(y_checked)
        return self

    def predict(self, X: Any) -> Any:
        """The retrofitted regressor's mean prediction for each row of X; RetrofitError naming a
        column that holds text where fit saw numbers only."""
        check_is_fitted(self)
        try:
            checked = validate_data(self, X, reset=False, **_AS_TABPFN_TAKES_IT)
        except ValueError as err:
            raise RetrofitError(
                f"RetrofitRegressor.predict: {_names_differ(self, X) or single_line(str(err))}"
            ) from None
        check_columns(X, "RetrofitRegressor.predict")
        n_rows = self.n_fitted_rows_ + len(checked)
        check_fit_work(self.n_fitted_rows_, n_rows, self.n_features_in_, "RetrofitRegressor.predict")
        new = {i: value for i, value in _text_cells(X).items() if i not in self.text_columns_}
        if new:
            i, value = next(iter(new.items()))
            name = repr(self.feature_names_in_[i]) if hasattr(self, "feature_names_in_") else f"{i} (0-based)"
            raise RetrofitError(
                f"RetrofitRegressor.predict: column {name} holds text ({bounded(repr(value), 60)}) where fit saw "
                "numbers only, and tabpfn reads it as numbers: give it numbers (NaN where a value is missing), or "
                "fit on that column as text too, so it is a categorical"
            )
        return self.regressor_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


def _names_differ(fitted: RetrofitRegressor, X: Any) -> str | None:
    """What differs between the columns of the DataFrame `X` and those `fitted` saw, in one line
    opening with sklearn's own sentence (the columns missing, those unexpected, or their order), and
    the fix; None when the names agree or either side has none."""
    seen = list(getattr(fitted, "feature_names_in_", ()))
    given = [str(name) for name in X.columns] if isinstance(X, pd.DataFrame) else []
    if not seen or not given or given == seen:
        return None
    missing, unexpected = [n for n in seen if n not in given], [n for n in given if n not in seen]
    differ = f"missing {listing(missing)}, unexpected {listing(unexpected)}" if missing or unexpected else "reordered"
    return (
        f"The feature names should match those that were passed during fit: {differ} (give X the columns fit "
        "saw, in its order: X[model.feature_names_in_], renaming a column if it was renamed)"
    )


def _text_cells(X: Any) -> dict[int, Any]:
    """Column position -> its first value that is text and no number (what tabpfn cannot read as a
    number: `"abc"`, not `"1.5"`), for each column of the table `X` (array or DataFrame) holding one."""
    frame = isinstance(X, pd.DataFrame)
    columns = (X.iloc[:, i].to_numpy() for i in range(X.shape[1])) if frame else np.asarray(X).T
    found = {}
    for i, column in enumerate(columns):
        if column.dtype.kind in "OUS":
            text = next((v for v in column if isinstance(v, str | bytes) and not _is_number(v)), None)
            if text is not None:
                found[i] = text
    return found


def _is_number(text: str | bytes) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numbers(y: Any) -> np.ndarray:
    """`y` as float64; RetrofitError if it is not numbers (a regression target; text is refused even
    where it reads as numbers, which tabpfn would not take)."""
    values = np.asarray(y)
    if values.dtype.kind in "US" or (values.dtype.kind == "O" and any(isinstance(v, str | bytes) for v in values.flat)):
        raise RetrofitError("RetrofitRegressor.fit: y must be numbers (a regression target), got text")
    try:
        return np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise RetrofitError("RetrofitRegressor.fit: y must be numbers (a regression target)") from None
