"""The regressor `retrofit` returns: a fitted TabPFNRegressor that runs a variant and refuses to refit."""

from typing import Any, NoReturn

from sklearn.base import clone as sklearn_clone
from tabpfn import TabPFNRegressor
from tabpfn.errors import TabPFNValidationError
from torch import nn

from retrofit.data.tabpfn_input import check_columns
from retrofit.errors import RetrofitError, single_line
from retrofit.patch_report import RetrofitReport, report_of
from retrofit.variants import Variant


class PatchedTabPFNRegressor(TabPFNRegressor):
    """What `retrofit` returns: a fitted TabPFNRegressor whose `predict` runs a variant.

    `fit` (and tabpfn's other fit methods) raise RetrofitError instead of refitting: tabpfn's fit
    reloads stock models from the checkpoint, which would drop the adapters while the report still
    names them. Refusing, rather than re-applying the variant after a refit, keeps one way to make
    a retrofitted model (`retrofit` on a fitted stock regressor), so a patched regressor is always
    the frozen copy of one named stock fit: what a matched comparison of variants needs. Refitting
    is `RetrofitRegressor`'s job (its `fit` fits the stock regressor and retrofits it).

    The report is read off the models once, when they are patched (`as_patched`), which also keeps
    the modules it was read off (`retrofit_modules_`: each model and each wrapper). `predict` runs
    only while `retrofit_report_` says what the models run: the same model objects with the same
    wrappers in place, or else models whose report, read again, is the same (RetrofitError if, say,
    `models_` was replaced or the regressor refitted around the refusal). `sklearn.base.clone` gives a plain
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
        """tabpfn's `predict` (same arguments), on models that run what the report says; an X tabpfn
        refuses (`retrofit.data.tabpfn_input.check_columns`, another width, no rows) is a
        RetrofitError in one line."""
        models = engine_models(self)
        if not self._as_patched(models):
            report = report_of(self.retrofit_report_.variant, models)
            if report != self.retrofit_report_:
                raise RetrofitError(
                    f"the models no longer run what retrofit_report_ says ({len(report.blocks)} wrapped blocks and "
                    f"{len(report.patched)} modules taken over, against {len(self.retrofit_report_.blocks)} and "
                    f"{len(self.retrofit_report_.patched)}): were models_ replaced? Retrofit the stock regressor again."
                )
        config = self.get_inference_config()
        check_columns(X, "predict", transform_dates=config.TRANSFORM_DATES, passthrough_inf=config.PASSTHROUGH_INF)
        try:
            return super().predict(X, **kwargs)
        except TabPFNValidationError as err:  # X of another width, no rows
            raise RetrofitError(f"predict: {single_line(str(err))}") from None

    def _as_patched(self, models: list[nn.Module]) -> bool:
        """Whether `models` are the model objects the report was read off, with its wrappers in place."""
        kept_models, kept_wrappers = getattr(self, "retrofit_modules_", ((), ()))
        if len(models) != len(kept_models) or any(m is not k for m, k in zip(models, kept_models, strict=True)):
            return False
        wrappers = block_wrappers(self.retrofit_report_, models)
        return len(wrappers) == len(kept_wrappers) and all(
            now is kept for now, kept in zip(wrappers, kept_wrappers, strict=True)
        )

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


def as_patched(clone: TabPFNRegressor, variant: Variant, models: list[nn.Module]) -> PatchedTabPFNRegressor:
    """`clone`, whose `models` now run `variant`, made a `PatchedTabPFNRegressor` with its report read
    off them (`retrofit.patch_report.report_of`) and the modules it was read off kept for `predict`."""
    report: RetrofitReport = report_of(variant, models)
    clone.__class__ = PatchedTabPFNRegressor
    clone.retrofit_report_ = report
    clone.retrofit_modules_ = (tuple(models), block_wrappers(report, models))
    return clone


def block_wrappers(report: RetrofitReport, models: list[nn.Module]) -> tuple[nn.Module, ...]:
    """The modules of `models` at the paths of `report.blocks` (`<model index>:<dotted name>`), in order."""
    paths = (block.partition(":") for block in report.blocks)
    return tuple(models[int(index)].get_submodule(name) for index, _, name in paths)
