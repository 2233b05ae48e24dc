"""`retrofit` and `unpatch`: O adapters into a frozen clone of a fitted TabPFNRegressor.

Patching runs in phases so that a failure never leaves a half-patched model:
prepare (check the regressor, copy it sharing the frozen weights' storage, freeze the clone),
match (find every in-context block of every model by its architecture spec), check (build every
wrapper, which validates the block it wraps), replace (swap wrapper for block: `get_submodule`, `setattr`).
The report is then read off the wrappers in place: the modules they actually took over.
"""

import copy
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
from omegaconf import DictConfig
from sklearn.base import clone as sklearn_clone
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.adapters import ADAPTERS, PARTS, OBlock, OClosedModel, architecture_of, close_model
from retrofit.errors import RetrofitError
from retrofit.tabpfn_internals import set_engine_models
from retrofit.variants import Variant, resolve_variant

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PatchedModule:
    """One host submodule an O operator took over: its dotted path in the model, the part, the
    adapter and the operator (`AdapterSpec.operator`) that now computes it."""

    model_index: int
    path: str
    part: str
    adapter: str
    operator: str


@dataclass(frozen=True)
class RetrofitReport:
    """What `retrofit` did: the variant, the architectures, the wrapped blocks, every submodule taken over.

    `blocks` and `patched` are read off the wrappers in the models (`OBlock.replaced`), not off a
    table of what a variant means to swap: a norm that already maps 0 to 0 (RMSNorm, a LayerNorm
    without bias) is left to the host and not listed.
    """

    variant: Variant
    architectures: tuple[str, ...]
    blocks: tuple[str, ...]
    patched: tuple[PatchedModule, ...]
    closed: tuple[str, ...] = ()
    """`<model index>:<stage>` of every host stage outside the in-context blocks that a whole-model
    wrapper (`OClosedModel`, a `closed` variant) re-implements with O operators."""

    def counts(self) -> dict[str, int]:
        """Number of host submodules taken over, per part (every part listed, 0 if none)."""
        return {part: sum(m.part == part for m in self.patched) for part in PARTS}

    def summary(self) -> str:
        """One line: variant, architectures, wrapped blocks, modules per part, tau rule."""
        counts = ", ".join(f"{part} {n}" for part, n in self.counts().items())
        tau = self.variant.tau.describe() if self.variant.tau else "no tau (nothing patched)"
        return (
            f"retrofit variant {self.variant.name!r} on {'/'.join(self.architectures)}: {len(self.blocks)} blocks "
            f"wrapped, {len(self.patched)} modules taken over ({counts}); {tau}; eps_den={self.variant.eps_den}, "
            f"eps_mode={self.variant.eps_mode}, compact={self.variant.compact}"
            + (f"; whole model closed ({len(self.closed)} stages outside the blocks)" if self.closed else "")
        )


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
        report = _report(self.retrofit_report_.variant, _models(self))
        if report != self.retrofit_report_:
            raise RetrofitError(
                f"the models no longer run what retrofit_report_ says ({len(report.blocks)} wrapped blocks and "
                f"{len(report.patched)} modules taken over, against {len(self.retrofit_report_.blocks)} and "
                f"{len(self.retrofit_report_.patched)}): were models_ replaced? Retrofit the stock regressor again."
            )
        return super().predict(X, **kwargs)

    def __sklearn_clone__(self) -> TabPFNRegressor:
        return sklearn_clone(TabPFNRegressor(**self.get_params(deep=False)))


def retrofit(
    regressor: TabPFNRegressor, variant: str | os.PathLike | Mapping[str, Any] | DictConfig, **hparams: Any
) -> PatchedTabPFNRegressor:
    """A frozen copy of the fitted `regressor` with `variant`'s O adapters patched in; the copy shares
    the storage of the frozen weights (one more variant costs its wrappers' state, not the weights).

    `variant`: a built-in variant name (`retrofit/configs/variant/`), a spec (dict / OmegaConf) or a variant file
    (a `pathlib.Path` or a string ending in .yaml; `retrofit.variants.variant_spec`); `hparams` override
    its `tau`, `eps_den`, `eps_mode`, `compact`. The result is still a fitted TabPFNRegressor
    (`.predict` runs the variant) and carries `retrofit_report_` (a `RetrofitReport`); it refuses
    `fit` (see `PatchedTabPFNRegressor`). `regressor` is not touched. Raises RetrofitError (a
    ValueError: unfitted, KV-cache fit mode, unknown architecture or variant, a block that does
    not match its spec) before anything is swapped.
    """
    spec = resolve_variant(variant, **hparams)
    clone = _prepare(regressor)
    models = _models(clone)
    targets = [(index, path, block) for index, model in enumerate(models) for path, block in _match(model)]
    closed = [close_model(model, spec) for model in models] if spec.closed else []
    if spec.adapters:
        wrappers = [
            architecture_of(models[index]).wrapper(
                block, spec.parts, spec.tau, spec.eps_den, spec.compact, spec.eps_mode
            )
            for index, _, block in targets
        ]
        for (index, path, _), wrapper in zip(targets, wrappers, strict=True):
            parent, _, child = path.rpartition(".")
            setattr(models[index].get_submodule(parent), child, wrapper)
    if closed:
        models = _set_models(clone, closed)
    clone.__class__ = PatchedTabPFNRegressor
    clone.retrofit_report_ = _report(spec, models)
    log.info(clone.retrofit_report_.summary())
    return clone


def unpatch(patched: TabPFNRegressor) -> TabPFNRegressor:
    """Put every wrapped block's `base_layer` back in place (in `patched` itself) and return it.

    The original modules come back unchanged: same `state_dict`, same predictions, bit for bit;
    the result is a plain TabPFNRegressor again (it can be refitted). RetrofitError for anything
    but a fitted TabPFNRegressor (what `retrofit` returns).
    """
    _check_fitted(patched, "unpatch")
    models = _models(patched)
    if any(isinstance(model, OClosedModel) for model in models):
        models = _set_models(patched, [getattr(model, "host_model", model) for model in models])
    for model in models:
        wrapped = [(name, m) for name, m in model.named_modules() if isinstance(m, OBlock)]
        for name, wrapper in wrapped:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, wrapper.base_layer)
    patched.__dict__.pop("retrofit_report_", None)
    if isinstance(patched, PatchedTabPFNRegressor):
        patched.__class__ = TabPFNRegressor
    return patched


def _prepare(regressor: TabPFNRegressor) -> TabPFNRegressor:
    """Refuse what cannot be retrofitted; return a deep copy with every parameter frozen."""
    _check_fitted(regressor, "retrofit")
    if regressor.fit_mode == "fit_with_cache":
        raise RetrofitError(
            "fit_mode='fit_with_cache' is not supported: its KV cache holds keys and values built by the "
            "stock attention, without the hidden-carrier presence OAttention needs. Fit the regressor with "
            "fit_mode='fit_preprocessors' (or 'low_memory') and retrofit that."
        )
    if getattr(regressor, "retrofit_report_", None) is not None:
        raise RetrofitError(
            "this regressor is already retrofitted; call retrofit.unpatch on it or retrofit the original"
        )
    if type(regressor) is not TabPFNRegressor:
        raise RetrofitError(
            f"retrofit needs a tabpfn.TabPFNRegressor itself, got its subclass {type(regressor).__name__}: the "
            "retrofitted copy is a PatchedTabPFNRegressor and would lose the subclass's behaviour"
        )
    clone = copy.deepcopy(regressor, memo=_shared_weights(regressor))
    for model in _models(clone):
        model.requires_grad_(False)
    return clone


def _shared_weights(regressor: TabPFNRegressor) -> dict[int, torch.Tensor]:
    """A `copy.deepcopy` memo under which the clone shares the storage of every parameter and buffer
    of `regressor`'s models: new, frozen tensor objects (the original's keep their `requires_grad`),
    the same memory. Nothing writes them in place: the adapters only read the weights, and a move
    to another dtype or device replaces the clone's tensors rather than writing into them."""
    memo: dict[int, torch.Tensor] = {}
    for model in getattr(regressor, "models_", []):
        memo |= {id(p): nn.Parameter(p.detach(), requires_grad=False) for p in model.parameters()}
        memo |= {id(b): b.detach() for b in model.buffers()}
    return memo


def _check_fitted(regressor: Any, action: str) -> None:
    """RetrofitError unless `regressor` is a fitted TabPFNRegressor (an engine, or a constant-target fit)."""
    if not isinstance(regressor, TabPFNRegressor):
        raise RetrofitError(f"{action} needs a fitted tabpfn.TabPFNRegressor, got {type(regressor).__name__}")
    if not (hasattr(regressor, "executor_") or getattr(regressor, "is_constant_target_", False)):
        raise RetrofitError(f"{action} needs a fitted TabPFNRegressor: this one is not fitted; call .fit(X, y) first")


def _models(regressor: TabPFNRegressor) -> list[nn.Module]:
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


def _set_models(regressor: TabPFNRegressor, models: list[nn.Module]) -> list[nn.Module]:
    """Make `models` the ones `regressor.predict` runs (its `models_` and its engine's); returns them.

    A constant-target fit has no engine: its `predict` gives the constant and runs no model, as it
    does for every variant."""
    regressor.models_ = list(models)
    if not getattr(regressor, "is_constant_target_", False):
        set_engine_models(regressor.executor_, regressor.models_)
    return regressor.models_


def _match(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(path, block) of every in-context block of `model`, each checked against the spec."""
    arch = architecture_of(model)
    blocks = model.get_submodule(arch.blocks)
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        raise RetrofitError(f"{arch.name}: {arch.blocks!r} should be a non-empty nn.ModuleList of {arch.block_class}")
    for i, block in enumerate(blocks):
        if isinstance(block, OBlock):
            raise RetrofitError(f"{arch.name}: {arch.blocks}.{i} is already an O wrapper; unpatch before retrofitting")
        if type(block).__name__ != arch.block_class or type(block).__module__ != arch.module:
            raise RetrofitError(
                f"{arch.name}: {arch.blocks}.{i} is a {type(block).__module__}.{type(block).__name__}, expected "
                f"{arch.module}.{arch.block_class}; the registered spec does not fit this model"
            )
    return [(f"{arch.blocks}.{i}", block) for i, block in enumerate(blocks)]


def _report(variant: Variant, models: list[nn.Module]) -> RetrofitReport:
    """The report of `variant` on `models` as they are: every O wrapper and what it replaced."""
    adapters = {spec.part: spec for spec in ADAPTERS.values()}
    wrapped = [
        (i, name, m) for i, model in enumerate(models) for name, m in model.named_modules() if isinstance(m, OBlock)
    ]
    return RetrofitReport(
        variant=variant,
        architectures=tuple(dict.fromkeys(architecture_of(model).name for model in models)),
        blocks=tuple(f"{i}:{name}" for i, name, _ in wrapped),
        patched=tuple(
            PatchedModule(i, f"{name}.{module}", part, adapters[part].name, adapters[part].operator)
            for i, name, wrapper in wrapped
            for part, module in wrapper.replaced
        ),
        closed=tuple(
            f"{i}:{stage}"
            for i, model in enumerate(models)
            if isinstance(model, OClosedModel)
            for stage in model.closed_stages
        ),
    )
