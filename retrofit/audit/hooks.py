"""The audit's hook plumbing: hooks on a regressor's models while a context is active.

`ModelHooks` is the base of the audit's recorders (`NullRows`, `NullInput`, `SinkProbe`): on entry
it asks `_hooks(model)` for the handles of every model of the regressor (its ensemble's models as
tabpfn keeps them, a whole-model O wrapper included) and removes them all on exit, also when a
forward pass raised or when registering failed half-way. `in_context_blocks_of` names a model's
in-context blocks by their path (`<spec.blocks>.<i>`, as the audit's rows and leaking modules
read), from the architecture spec alone; `carriers` reads the carrier tensor a block receives
(tabpfn passes it bare or as a one-element list).
"""

from collections.abc import Iterator

import torch
from tabpfn import TabPFNRegressor
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters import architecture_of, in_context_blocks


class ModelHooks:
    """Context manager: the handles of `_hooks(model)` for every model of `regressor`, while active."""

    def __init__(self, regressor: TabPFNRegressor):
        self.models = list(regressor.models_)
        self._handles: list[RemovableHandle] = []

    def _hooks(self, model: nn.Module) -> list[RemovableHandle]:
        """The hooks this recorder registers on `model` (subclasses say which)."""
        raise NotImplementedError

    def __enter__(self):
        try:
            for model in self.models:
                self._handles += self._hooks(model)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def in_context_blocks_of(model: nn.Module) -> Iterator[tuple[int, str, nn.Module]]:
    """(index, path, block) of `model`'s in-context blocks; path is `<spec.blocks>.<index>`."""
    path = architecture_of(model).blocks
    for i, block in enumerate(in_context_blocks(model)):
        yield i, f"{path}.{i}", block


def carriers(x: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    """The carrier tensor of a block's first argument (bare, or the only entry of a list)."""
    return x[0] if isinstance(x, list) else x
