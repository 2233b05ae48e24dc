"""Shared stages: what a host computes before its in-context blocks, computed once for every model
of a case that runs it unchanged.

The variants of a case patch the in-context blocks only (o_closed replaces the whole model), so the
stock, `oa_only`, `full_o` and every arm of a v3-family host compute the same stages before the
blocks (feature embedding, distribution embedder, column aggregator) on the same preprocessed input
of every ensemble member; the CPU time a case spends with and without the reuse is measured in
`results/sweep_cost.csv` (`make sweep-cost`). `ArchitectureSpec.shared_stages` names
the model method that computes them from its arguments and the model's own modules
(`_stages_0_to_2` for the v3 family; "" where there is none, as in the v2 family, whose every
block is wrapped).

    stages = StageCache()
    with stages.reused(regressor_a):   # computes the stages and keeps them
        a = regressor_a.predict(X)
    with stages.reused(regressor_b):   # same weights, same input: the kept tensors
        b = regressor_b.predict(X)

Contract: a prediction under `reused` is bitwise the prediction without it. A result is reused
only under a key that holds everything it depends on: the model's class; every module outside the
in-context blocks, by path, class and plain (int, float, bool, str) attributes, and every parameter
and buffer there, by path, dtype, shape, `requires_grad` and content (a model with other weights,
another module in those stages or frozen differently never meets another's tensors); the
content of every tensor argument and the value of every other argument; torch's thread count
and grad / autocast state. A call with an argument the key cannot hold (an object other than
tensors, plain values, enums, dataclasses and containers of them, e.g. a KV cache) and a call in
training mode are computed, not kept. Only a model of the architecture itself takes the cache: a
whole-model wrapper (`OClosedModel`) runs its own stages and is left alone. Reused results are
fresh clones (the forward writes into its stage output in place); the cache holds one clone per
key until it is dropped.
"""

import dataclasses
import enum
import functools
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.adapters.registry import architecture_of

PLAIN = (int, float, bool, str, type(None))
"""Attribute and argument values the key holds by value."""


class _Unkeyable(Exception):
    """An argument the key cannot hold: the call is computed, not kept."""


class StageCache:
    """The shared stages' results of the models run under `reused`, by key (see the module docstring).

    `hits` / `misses` count the reused and the computed-and-kept calls."""

    def __init__(self) -> None:
        self._results: dict[bytes, Any] = {}
        self.hits = 0
        self.misses = 0

    @contextmanager
    def reused(self, regressor: TabPFNRegressor) -> Iterator[None]:
        """Within the block, every engine model of `regressor` whose architecture names
        `shared_stages` (and is that architecture itself, not a wrapper) computes those stages
        through this cache; the models are restored on exit."""
        models = list(
            {id(model): model for model in getattr(regressor, "models_", []) if _stage_method(model)}.values()
        )
        for model in models:
            name = _stage_method(model)
            setattr(model, name, functools.partial(self._call, model, getattr(model, name), name))
        try:
            yield
        finally:
            for model in models:
                delattr(model, _stage_method(model))

    def _call(self, model: nn.Module, compute: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
        if model.training:
            return compute(*args, **kwargs)
        try:
            key = _key(model, name, args, kwargs)
        except _Unkeyable:
            return compute(*args, **kwargs)
        if key in self._results:
            self.hits += 1
            return _cloned(self._results[key])
        result = compute(*args, **kwargs)
        self._results[key] = _cloned(result)
        self.misses += 1
        return result


def _stage_method(model: nn.Module) -> str:
    """The name of `model`'s shared-stage method, "" when it has none to share."""
    spec = architecture_of(model)
    own = type(model).__module__ == spec.module and hasattr(type(model), spec.shared_stages or "-")
    return spec.shared_stages if own else ""


def _key(model: nn.Module, name: str, args: tuple, kwargs: dict) -> bytes:
    digest = hashlib.blake2b(digest_size=32)
    blocks = architecture_of(model).blocks
    _feed(digest, (type(model).__module__, type(model).__qualname__, name))
    for path, module in model.named_modules():
        if path == blocks or path.startswith(blocks + "."):
            continue
        plain = sorted((k, v) for k, v in vars(module).items() if isinstance(v, PLAIN) and not k.startswith("__"))
        _feed(digest, ("module", path, type(module).__module__, type(module).__qualname__, plain))
        for tensor_name, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            _feed(digest, ("tensor", path, tensor_name, tensor.requires_grad))
            _feed_tensor(digest, tensor)
    _feed(digest, ("call", torch.get_num_threads(), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
    _feed(digest, ("autocast", *(_autocast(device) for device in ("cpu", "cuda"))))
    _feed_value(digest, args)
    _feed_value(digest, kwargs)
    return digest.digest()


def _autocast(device: str) -> tuple:
    return (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))


def _feed(digest: "hashlib._Hash", value: Any) -> None:
    encoded = repr(value).encode()
    digest.update(len(encoded).to_bytes(8, "little") + encoded)


def _feed_tensor(digest: "hashlib._Hash", tensor: torch.Tensor) -> None:
    flat = tensor.detach().contiguous().reshape(-1)
    _feed(digest, ("data", str(flat.dtype), tuple(tensor.shape), tuple(tensor.stride()), str(tensor.device)))
    digest.update(flat.cpu().view(torch.uint8).numpy().tobytes())


def _feed_value(digest: "hashlib._Hash", value: Any) -> None:
    """Feed an argument by value; _Unkeyable for anything the key cannot hold."""
    if isinstance(value, torch.Tensor):
        _feed(digest, ("tensor", value.requires_grad))
        _feed_tensor(digest, value)
    elif isinstance(value, (enum.Enum, *PLAIN, torch.dtype, torch.device)):
        _feed(digest, (type(value).__qualname__, value))
    elif isinstance(value, list | tuple):
        _feed(digest, (type(value).__qualname__, len(value)))
        for item in value:
            _feed_value(digest, item)
    elif isinstance(value, dict):
        _feed(digest, ("dict", len(value)))
        for item_key in sorted(value, key=repr):
            _feed_value(digest, item_key)
            _feed_value(digest, value[item_key])
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _feed(digest, ("dataclass", type(value).__module__, type(value).__qualname__))
        for item in dataclasses.fields(value):
            _feed(digest, item.name)
            _feed_value(digest, getattr(value, item.name))
    else:
        raise _Unkeyable(type(value).__qualname__)


def _cloned(value: Any) -> Any:
    """`value` with every tensor in it cloned (strides kept), containers rebuilt."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_cloned(item) for item in value))
    if isinstance(value, list | tuple):
        return type(value)(_cloned(item) for item in value)
    if isinstance(value, dict):
        return type(value)((key, _cloned(item)) for key, item in value.items())
    return value
