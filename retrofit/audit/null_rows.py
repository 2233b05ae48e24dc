"""Null-row insertion into the in-context stage of a regressor's models, with recording.

`NullRows(regressor, k)` is a context manager. While it is active every forward pass of the
regressor's models inserts `k` zero carriers (null rows) at fixed random positions among the
context (train) rows entering the first in-context block, counts them as context rows in every
block, records the old rows' states after each block, and removes the null rows after the last
block, so the readout sees the original rows. `k = 0` records a reference run.
It also watches the blocks and their direct submodules (the ones writing onto the carriers:
attention, FFN, norms; a wrapper's are those of its `base_layer`): a module re-activates a null
carrier when an all-zero input row comes out non-zero. Modules nested deeper are not watched:
their intermediates (e.g. a biased query-scaling MLP whose output multiplies a zero query) are
not carriers.
"""

from collections import defaultdict

import torch
from tabpfn import TabPFNRegressor
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.audit.hooks import ModelHooks, carriers, in_context_blocks_of
from retrofit.ops.insertion import insert_rows, random_keep_mask


class NullRows(ModelHooks):
    """Insert `k` null rows (positions drawn with `seed`) and record, for one regressor."""

    def __init__(self, regressor: TabPFNRegressor, k: int, seed: int = 0):
        super().__init__(regressor)
        self.k = k
        self.generator = torch.Generator().manual_seed(seed)
        self.states: dict[str, list[torch.Tensor]] = defaultdict(list)
        """block path -> old rows' states after it, one tensor per forward call."""
        self.reactivations: dict[str, int] = defaultdict(int)
        """module path -> number of null input rows it turned non-zero."""
        self.first_seen: dict[str, int] = {}
        """module path -> order of its first re-activation."""
        self._old_R: torch.Tensor | None = None

    def _hooks(self, model: nn.Module) -> list[RemovableHandle]:
        blocks = list(in_context_blocks_of(model))
        handles = []
        for i, path, block in blocks:
            first, last = i == 0, i == len(blocks) - 1
            handles.append(block.register_forward_pre_hook(self._pre_hook(first), with_kwargs=True))
            handles.append(block.register_forward_hook(self._post_hook(path, last)))
            for name, module in block.named_modules(prefix=path):
                if "." not in name[len(path) + 1 :].removeprefix("base_layer."):
                    handles.append(module.register_forward_hook(self._watch(name)))
        return handles

    def _pre_hook(self, first: bool):
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            x, single_eval_pos, *rest = args
            in_list = isinstance(x, list)
            x = carriers(x)
            if first:
                x = self._insert(x, single_eval_pos)
            return (([x] if in_list else x), single_eval_pos + self.k, *rest), kwargs

        return hook

    def _insert(self, x_BRxE: torch.Tensor, single_eval_pos: int) -> torch.Tensor:
        """x with k zero rows at random positions among the first single_eval_pos + k rows."""
        context_L = random_keep_mask(single_eval_pos, self.k, self.generator)
        self._old_R = torch.cat([context_L, context_L.new_ones(x_BRxE.shape[1] - single_eval_pos)])
        return insert_rows(x_BRxE, self._old_R, dim=1)

    def _post_hook(self, path: str, last: bool):
        def hook(module: nn.Module, args: tuple, output: tuple) -> tuple:
            x, *rest = output
            old_x = x[:, self._old_R]
            self.states[path].append(old_x.detach().clone())
            if (x[:, ~self._old_R] != 0).any():
                self._note(path, int((x[:, ~self._old_R] != 0).any(-1).sum()))
            return (old_x, *rest) if last else output

        return hook

    def _watch(self, name: str):
        def hook(module: nn.Module, args: tuple, output: object) -> None:
            x_in = args[0] if args and isinstance(args[0], torch.Tensor) else None
            x_out = output[0] if isinstance(output, tuple) else output
            if x_in is None or not isinstance(x_out, torch.Tensor) or x_in.shape[:-1] != x_out.shape[:-1]:
                return
            zero_rows = (x_in == 0).all(-1)
            woken = int((zero_rows & (x_out != 0).any(-1)).sum())
            if woken:
                self._note(name, woken)

        return hook

    def _note(self, name: str, woken: int) -> None:
        self.reactivations[name] += woken
        self.first_seen.setdefault(name, len(self.first_seen))


def first_leaking_module(inserted: NullRows, reference: NullRows) -> str:
    """The module that re-activated a null carrier first (beyond what the reference run shows)."""
    leaking = [
        name for name in inserted.first_seen if inserted.reactivations[name] > reference.reactivations.get(name, 0)
    ]
    return min(leaking, key=inserted.first_seen.__getitem__, default="")
