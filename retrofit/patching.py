"""`retrofit` and `unpatch`: O adapters into a frozen clone of a fitted TabPFNRegressor.

Patching runs in phases so that a failure never leaves a half-patched model:
prepare (check the regressor, deep-copy it, freeze the clone), match (find every in-context
block of every model by its architecture spec), check (build every wrapper, which validates the
block it wraps), replace (swap wrapper for block: `get_submodule`, `setattr`).
"""

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.adapters import PARTS, OBlock, adapter, architecture_of
from retrofit.variants import Variant, resolve_variant
from retrofit.errors import RetrofitError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PatchedModule:
    """One host submodule taken over by an adapter: its dotted path in the model."""

    model_index: int
    path: str
    part: str
    adapter: str


@dataclass(frozen=True)
class RetrofitReport:
    """What `retrofit` did: the variant, the architectures, every submodule taken over."""

    variant: Variant
    architectures: tuple[str, ...]
    blocks: tuple[str, ...]
    patched: tuple[PatchedModule, ...]

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
            f"compact={self.variant.compact}"
        )


def retrofit(
    regressor: TabPFNRegressor, variant: str | Mapping[str, Any] | DictConfig, **hparams: Any
) -> TabPFNRegressor:
    """A frozen deep copy of the fitted `regressor` with `variant`'s O adapters patched in.

    `variant`: a name in `configs/variant/` or a spec (dict / OmegaConf); `hparams` override
    its `tau`, `eps_den`, `compact`. The result is still a fitted TabPFNRegressor (`.predict`
    runs the variant) and carries `retrofit_report_` (a `RetrofitReport`). `regressor` is not
    touched. Raises RetrofitError (a ValueError: unfitted, KV-cache fit mode, unknown architecture
    or variant, a block that does not match its spec) before anything is swapped.
    """
    spec = resolve_variant(variant, **hparams)
    clone = _prepare(regressor)
    models = _models(clone)
    targets = [(index, path, block) for index, model in enumerate(models) for path, block in _match(model)]
    if spec.adapters:
        wrappers = [
            architecture_of(models[index]).wrapper(block, spec.parts, spec.tau, spec.eps_den, spec.compact)
            for index, _, block in targets
        ]
        for (index, path, _), wrapper in zip(targets, wrappers, strict=True):
            parent, _, child = path.rpartition(".")
            setattr(models[index].get_submodule(parent), child, wrapper)
    clone.retrofit_report_ = _report(spec, models, targets)
    log.info(clone.retrofit_report_.summary())
    return clone


def unpatch(patched: TabPFNRegressor) -> TabPFNRegressor:
    """Put every wrapped block's `base_layer` back in place (in `patched` itself) and return it.

    The original modules come back unchanged: same `state_dict`, same predictions, bit for bit.
    """
    for model in _models(patched):
        wrapped = [(name, m) for name, m in model.named_modules() if isinstance(m, OBlock)]
        for name, wrapper in wrapped:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, wrapper.base_layer)
    patched.__dict__.pop("retrofit_report_", None)
    return patched


def _prepare(regressor: TabPFNRegressor) -> TabPFNRegressor:
    """Refuse what cannot be retrofitted; return a deep copy with every parameter frozen."""
    if not isinstance(regressor, TabPFNRegressor):
        raise RetrofitError(f"retrofit needs a fitted tabpfn.TabPFNRegressor, got {type(regressor).__name__}")
    if not hasattr(regressor, "executor_"):
        raise RetrofitError("retrofit needs a fitted TabPFNRegressor: call .fit(X, y) first")
    if regressor.fit_mode == "fit_with_cache":
        raise RetrofitError(
            "fit_mode='fit_with_cache' is not supported: its KV cache holds keys and values built by the "
            "stock attention, without the hidden-carrier presence OAttention needs. Fit the regressor with "
            "fit_mode='fit_preprocessors' (or 'low_memory') and retrofit that."
        )
    if getattr(regressor, "retrofit_report_", None) is not None:
        raise RetrofitError("this regressor is already retrofitted; call retrofit.unpatch on it or retrofit the original")
    clone = copy.deepcopy(regressor)
    for model in _models(clone):
        model.requires_grad_(False)
    return clone


def _models(regressor: TabPFNRegressor) -> list[nn.Module]:
    """The models `predict` runs; RetrofitError if the engine holds copies patching would miss."""
    models = list(regressor.models_)
    caches = getattr(regressor.executor_, "model_caches", None) or []
    for cache in caches:
        for device in cache.get_devices():
            if not any(cache.get(device) is model for model in models):
                raise RetrofitError(
                    f"the inference engine holds a model copy on {device} that is not in regressor.models_ "
                    "(several devices?); retrofit a regressor fitted on a single device"
                )
    return models


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


def _report(spec: Variant, models: list[nn.Module], targets: list[tuple[int, str, nn.Module]]) -> RetrofitReport:
    """The report of patching `targets` under `spec`: one entry per host submodule taken over."""
    patched = tuple(
        PatchedModule(index, f"{path}.{name}", adapter(adapter_name).part, adapter_name)
        for index, path, _ in targets
        for adapter_name in spec.adapters
        for name in architecture_of(models[index]).parts[adapter(adapter_name).part]
    )
    return RetrofitReport(
        variant=spec,
        architectures=tuple(dict.fromkeys(architecture_of(model).name for model in models)),
        blocks=tuple(f"{index}:{path}" for index, path, _ in targets) if spec.adapters else (),
        patched=patched,
    )
