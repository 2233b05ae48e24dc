"""Absent rows or columns inserted into the raw input of a regressor's models, with recording.

`NullInput(regressor, k, kind)` is a context manager. While it is active every forward pass of
the regressor's models receives `k` zero train rows (`kind="rows"`) or `k` zero feature columns
(`kind="columns"`) at fixed random positions, inserted into the model's input tensors (after
tabpfn's preprocessing, which runs per ensemble member before the model). A whole-model O
wrapper (`o_closed`) is told they are absent (`row_presence`, `column_presence`); any other
model sees them as ordinary zeros, which is all a stock host can be given. The test rows are
untouched, so the predictions line up with a reference run (`k = 0`).
It records the carriers entering the first in-context block and the old rows' states after
every block (rows are axis 1 in every architecture); where the inserted columns change a
carrier's shape (the v2 family keeps a feature axis) the comparison is left out.
"""

from collections import defaultdict

import torch
from tabpfn import TabPFNRegressor
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters import OClosedModel
from retrofit.audit.hooks import ModelHooks, carriers, in_context_blocks_of
from retrofit.ops.insertion import insert_rows, random_keep_mask

KINDS = ("rows", "columns")


class NullInput(ModelHooks):
    """Insert `k` absent train rows or feature columns (positions drawn with `seed`) and record."""

    def __init__(self, regressor: TabPFNRegressor, k: int, kind: str, seed: int = 0):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        super().__init__(regressor)
        self.k, self.kind = k, kind
        self.generator = torch.Generator().manual_seed(seed)
        self.entry: list[torch.Tensor] = []
        """old rows' carriers entering the first in-context block, one tensor per forward call."""
        self.null_entry_nonzero = False
        """whether an inserted row's carrier entering the first in-context block is non-zero."""
        self.states: dict[str, list[torch.Tensor]] = defaultdict(list)
        """block path -> old rows' states after it, one tensor per forward call."""
        self._old_R: torch.Tensor | None = None

    def _hooks(self, model: nn.Module) -> list[RemovableHandle]:
        handles = [model.register_forward_pre_hook(self._insert, with_kwargs=True)]
        for i, path, block in in_context_blocks_of(model):
            if i == 0:
                handles.append(block.register_forward_pre_hook(self._record_entry))
            handles.append(block.register_forward_hook(self._record_state(path)))
        return handles

    def _insert(self, model: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The model's (x (R, B, C), y (N,) or (N, B), ...) with the absent rows or columns inserted."""
        x_RBC, y, *rest = args
        R, B, C = x_RBC.shape
        N = y.shape[0]
        p_BR, p_BC = x_RBC.new_ones(B, R), x_RBC.new_ones(B, C)
        if self.kind == "rows":
            old_L = random_keep_mask(N, self.k, self.generator)
            x_RBC = torch.cat([insert_rows(x_RBC[:N], old_L, 0), x_RBC[N:]])
            y = insert_rows(y, old_L, 0)
            p_BR = torch.cat([old_L.to(x_RBC.dtype)[None].expand(B, -1), p_BR[:, N:]], dim=1)
            self._old_R = torch.cat([old_L, old_L.new_ones(R - N)])
        else:
            old_L = random_keep_mask(C, self.k, self.generator)
            x_RBC = insert_rows(x_RBC, old_L, 2)
            p_BC = old_L.to(x_RBC.dtype)[None].expand(B, -1)
            if kwargs.get("categorical_inds"):
                new_index = old_L.nonzero()[:, 0].tolist()
                kwargs["categorical_inds"] = [[new_index[c] for c in inds] for inds in kwargs["categorical_inds"]]
            self._old_R = torch.ones(R, dtype=torch.bool)
        if isinstance(model, OClosedModel):
            kwargs = {**kwargs, "row_presence": p_BR, "column_presence": p_BC}
        return (x_RBC, y, *rest), kwargs

    def _record_entry(self, module: nn.Module, args: tuple) -> None:
        x = carriers(args[0])
        old_R = self._old_rows(x)
        self.entry.append(x[:, old_R].detach().clone())
        self.null_entry_nonzero |= bool((x[:, ~old_R] != 0).any())

    def _record_state(self, path: str):
        def hook(module: nn.Module, args: tuple, output: tuple) -> None:
            self.states[path].append(output[0][:, self._old_rows(output[0])].detach().clone())

        return hook

    def _old_rows(self, x_BRx: torch.Tensor) -> torch.Tensor:
        """The old-row mask over the rows of a carrier tensor; rows a model adds in front of the
        table before its in-context blocks (v2.5/v2.6 thinking rows) count as old rows."""
        extra = x_BRx.shape[1] - self._old_R.shape[0]
        return torch.cat([self._old_R.new_ones(extra), self._old_R])


def leaking_stage(
    inserted: NullInput, reference: NullInput, rel_bound: float, linf_pred: float, scale_pred: float
) -> str:
    """Where absence at the input first shows: "column_stage" (everything before the in-context
    blocks) if an inserted row's carrier entering them is non-zero or an old row's carrier moved by
    more than `rel_bound` of its scale (or, where shapes do not line up, the prediction did); else
    the first in-context block whose old rows moved by more than that; else ""."""
    if inserted.null_entry_nonzero or _moved(inserted.entry, reference.entry, rel_bound):
        return "column_stage"
    if _shapes_differ(inserted.entry, reference.entry):
        return "column_stage" if linf_pred > rel_bound * scale_pred else ""
    for block, states in reference.states.items():
        if _moved(inserted.states[block], states, rel_bound):
            return block
    return ""


def _shapes_differ(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return any(x.shape != y.shape for x, y in zip(a, b, strict=True))


def _moved(a: list[torch.Tensor], b: list[torch.Tensor], rel_bound: float) -> bool:
    """Whether some state in `a` differs from its reference in `b` by more than `rel_bound` of
    the reference's largest magnitude (False where shapes do not line up)."""
    if _shapes_differ(a, b):
        return False
    scale = max(float(y.abs().max()) for y in b)
    return any(float((x - y).abs().max()) > rel_bound * scale for x, y in zip(a, b, strict=True))
