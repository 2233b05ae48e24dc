"""`retrofit` and `unpatch`: O adapters into a frozen clone of a fitted TabPFNRegressor.

Patching runs in phases so that a failure never leaves a half-patched model:
prepare (check the regressor, copy it sharing the frozen weights' storage, freeze the clone),
match (find every in-context block of every model by its architecture spec), check (build every
wrapper, which validates the block it wraps), replace (swap wrapper for block: `get_submodule`, `setattr`).
The report is then read off the wrappers in place: the modules they actually took over
(`retrofit.patch_report`); the patched clone is a `retrofit.patched.PatchedTabPFNRegressor`.
"""

import copy
import logging
import os
from collections.abc import Mapping
from typing import Any

import torch
from omegaconf import DictConfig
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.adapters import OBlock, OClosedModel, architecture_of, close_model
from retrofit.errors import RetrofitError
from retrofit.patched import PatchedTabPFNRegressor, as_patched, engine_models
from retrofit.tabpfn_internals import set_engine_models
from retrofit.variants import Variant, check_hparams_used, resolve_variant

log = logging.getLogger(__name__)


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
    not match its spec, a hyper-parameter the variant does not use) before anything is swapped.
    """
    resolved = resolve_variant(variant, **hparams)
    check_hparams_used(resolved, hparams, "retrofit", drop="drop {key}=")
    return patch_variant(regressor, resolved)


def patch_variant(regressor: TabPFNRegressor, spec: Variant) -> PatchedTabPFNRegressor:
    """`retrofit` of a variant already resolved (`retrofit.variants.resolve_variant`), e.g. once
    for all the fits it patches."""
    clone = _prepare(regressor)
    models = engine_models(clone)
    targets = [(index, path, block) for index, model in enumerate(models) for path, block in _match(model)]
    closed = [close_model(model, spec) for model in models] if spec.closed else []
    if spec.adapters:
        wrappers = [
            architecture_of(models[index]).wrapper(block, spec.parts, spec.tau, spec.attention)
            for index, _, block in targets
        ]
        for (index, path, _), wrapper in zip(targets, wrappers, strict=True):
            parent, _, child = path.rpartition(".")
            setattr(models[index].get_submodule(parent), child, wrapper)
    if closed:
        models = _set_models(clone, closed)
    clone = as_patched(clone, spec, models)
    log.info(clone.retrofit_report_.summary())
    return clone


def unpatch(patched: TabPFNRegressor) -> TabPFNRegressor:
    """Put every wrapped block's `base_layer` back in place (in `patched` itself) and return it.

    The original modules come back unchanged: same `state_dict`, same predictions, bit for bit;
    the result is a plain TabPFNRegressor again (it can be refitted). RetrofitError for anything
    but a fitted TabPFNRegressor (what `retrofit` returns).
    """
    _check_fitted(patched, "unpatch")
    models = engine_models(patched)
    if any(isinstance(model, OClosedModel) for model in models):
        models = _set_models(patched, [getattr(model, "host_model", model) for model in models])
    for model in models:
        wrapped = [(name, m) for name, m in model.named_modules() if isinstance(m, OBlock)]
        for name, wrapper in wrapped:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, wrapper.base_layer)
    patched.__dict__.pop("retrofit_report_", None)
    patched.__dict__.pop("retrofit_modules_", None)
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
    for model in engine_models(clone):
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
