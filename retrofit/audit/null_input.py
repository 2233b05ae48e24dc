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

from retrofit.adapters import OClosedModel, architecture_of, in_context_blocks

KINDS = ("rows", "columns")


class NullInput:
    """Insert `k` absent train rows or feature columns (positions drawn with `seed`) and record."""

    def __init__(self, regressor: TabPFNRegressor, k: int, kind: str, seed: int = 0):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.models = list(regressor.models_)
        self.k, self.kind = k, kind
        self.generator = torch.Generator().manual_seed(seed)
        self.entry: list[torch.Tensor] = []
        """old rows' carriers entering the first in-context block, one tensor per forward call."""
        self.null_entry_nonzero = False
        """whether an inserted row's carrier entering the first in-context block is non-zero."""
        self.states: dict[str, list[torch.Tensor]] = defaultdict(list)
        """block path -> old rows' states after it, one tensor per forward call."""
        self._old_R: torch.Tensor | None = None
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    def __enter__(self) -> "NullInput":
        for model in self.models:
            self._handles.append(model.register_forward_pre_hook(self._insert, with_kwargs=True))
            spec = architecture_of(model)
            blocks = in_context_blocks(model)
            self._handles.append(blocks[0].register_forward_pre_hook(self._record_entry))
            for i, block in enumerate(blocks):
                self._handles.append(block.register_forward_hook(self._record_state(f"{spec.blocks}.{i}")))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()

    def _insert(self, model: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The model's (x (R, B, C), y (N,) or (N, B), ...) with the absent rows or columns inserted."""
        x_RBC, y, *rest = args
        R, B, C = x_RBC.shape
        N = y.shape[0]
        p_BR, p_BC = x_RBC.new_ones(B, R), x_RBC.new_ones(B, C)
        if self.kind == "rows":
            old_L = self._old_positions(N)
            x_RBC = torch.cat([_spread(x_RBC[:N], old_L, 0), x_RBC[N:]])
            y = _spread(y, old_L, 0)
            p_BR = torch.cat([old_L.to(x_RBC.dtype)[None].expand(B, -1), p_BR[:, N:]], dim=1)
            self._old_R = torch.cat([old_L, old_L.new_ones(R - N)])
        else:
            old_L = self._old_positions(C)
            x_RBC = _spread(x_RBC, old_L, 2)
            p_BC = old_L.to(x_RBC.dtype)[None].expand(B, -1)
            if kwargs.get("categorical_inds"):
                new_index = old_L.nonzero()[:, 0].tolist()
                kwargs["categorical_inds"] = [[new_index[c] for c in inds] for inds in kwargs["categorical_inds"]]
            self._old_R = torch.ones(R, dtype=torch.bool)
        if isinstance(model, OClosedModel):
            kwargs = {**kwargs, "row_presence": p_BR, "column_presence": p_BC}
        return (x_RBC, y, *rest), kwargs

    def _old_positions(self, n: int) -> torch.Tensor:
        """(n + k,) bool: True at the n old positions, False at k random ones."""
        old_L = torch.ones(n + self.k, dtype=torch.bool)
        old_L[torch.randperm(n + self.k, generator=self.generator)[: self.k]] = False
        return old_L

    def _record_entry(self, module: nn.Module, args: tuple) -> None:
        x = args[0][0] if isinstance(args[0], list) else args[0]
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


def _spread(x: torch.Tensor, old_L: torch.Tensor, dim: int) -> torch.Tensor:
    """x with zeros inserted along `dim` where `old_L` is False (x's entries where it is True)."""
    shape = list(x.shape)
    shape[dim] = old_L.shape[0]
    out = x.new_zeros(shape)
    index = [slice(None)] * x.dim()
    index[dim] = old_L
    out[tuple(index)] = x
    return out


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
