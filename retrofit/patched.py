"""The regressor `retrofit` returns: a fitted TabPFNRegressor that runs a variant and refuses to refit."""

from typing import Any, NoReturn

from sklearn.base import clone as sklearn_clone
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.errors import RetrofitError
from retrofit.report import report_of


class PatchedTabPFNRegressor(TabPFNRegressor):
    """What `retrofit` returns: a fitted TabPFNRegressor whose `predict` runs a variant.

    `fit` (and tabpfn's other fit methods) raise RetrofitError instead of refitting: tabpfn's fit
    reloads stock models from the checkpoint, which would drop the adapters while the report still
    names them. Refusing, rather than re-applying the variant after a refit, keeps one way to make
    a retrofitted model (`retrofit` on a fitted stock regressor), so a patched regressor is always
    the frozen copy of one named stock fit: what a matched comparison of variants needs. Refitting
    is `RetrofitRegressor`'s job (its `fit` fits the stock regressor and retrofits it).

    `predict` first checks that the wrappers in the models are still those `retrofit_report_`
    lists (RetrofitError if, say, `models_` was replaced). `sklearn.base.clone` gives a plain
    unfitted TabPFNRegressor with the same parameters: clone copies parameters, and the variant
    is fitted state. Pickling round-trips (the class lives at module level).
    """

    def fit(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused; see the class docstring."""
        raise RetrofitError(
            f"this regressor runs retrofit variant {self.retrofit_report_.variant.name!r}; fitting it would reload "
            "the stock models and silently drop the O adapters. Fit a stock TabPFNRegressor and call "
            "retrofit.retrofit on it, or use retrofit.RetrofitRegressor, whose fit does both."
        )

    fit_from_preprocessed = fit_with_differentiable_input = fit

    def predict(self, X: Any, **kwargs: Any) -> Any:
        """tabpfn's `predict` (same arguments), after checking the modules against the report."""
        report = report_of(self.retrofit_report_.variant, engine_models(self))
        if report != self.retrofit_report_:
            raise RetrofitError(
                f"the models no longer run what retrofit_report_ says ({len(report.blocks)} wrapped blocks and "
                f"{len(report.patched)} modules taken over, against {len(self.retrofit_report_.blocks)} and "
                f"{len(self.retrofit_report_.patched)}): were models_ replaced? Retrofit the stock regressor again."
            )
        return super().predict(X, **kwargs)

    def __sklearn_clone__(self) -> TabPFNRegressor:
        return sklearn_clone(TabPFNRegressor(**self.get_params(deep=False)))


def engine_models(regressor: TabPFNRegressor) -> list[nn.Module]:
    """The models `predict` runs; RetrofitError if the engine holds copies patching would miss.

    A constant-target fit has no engine (tabpfn predicts the constant without running a model).
    """
    models = list(regressor.models_)
    caches = getattr(getattr(regressor, "executor_", None), "model_caches", None) or []
    for cache in caches:
        for device in cache.get_devices():
            if not any(cache.get(device) is model for model in models):
                raise RetrofitError(
                    f"the inference engine holds a model on {device} that is not in regressor.models_ (models_ "
                    "replaced, or several devices?); retrofit a stock regressor fitted on a single device"
                )
    return models
