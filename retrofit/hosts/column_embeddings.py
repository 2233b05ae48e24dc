"""The v2 family's column embeddings, carried by the host instead of drawn on the device it runs on.

tabpfn's v2-family models add to each column (feature group) a random vector drawn at every
forward, `torch.randn((columns, width), generator=torch.Generator(device=x.device).manual_seed(seed))`,
and map it through the linear layer `feature_positional_embedding_embeddings`. CPU and CUDA
generators give different numbers for one seed, and the draw for k columns is not the first k
rows of a larger draw, so a host trained on one device's draws is co-adapted to them and predicts
differently on another device. tabpfn fixed this for v2.5 and v2.6 by shipping a table of draws
(`tabpfn/architectures/shared/tabpfn_col_embedding.pt`, width 48, which overrides the draw for the
first 2,000 columns); v2 itself always draws on the device, and so do v2.5 and v2.6 at any other width.

A host this project writes carries its draws: `ColumnEmbeddings`, the CPU draw of every column count
1..`max_columns` it was trained for (its training ran on the CPU), stored in the checkpoint's header
field `column_embeddings`. `StoredColumnEmbedding` takes the place of the linear layer and feeds it
the stored draw for the forward's column count instead of the one drawn on the device (above
`max_columns`, a count the host never trained on, the CPU draw of that count), so a host predicts
the same on every device and under every torch version, and on the CPU bitwise as the stock model.
A v2-family model without stored draws still draws on its device (`draws_on_device`).

Importing this module makes tabpfn's loader pin every model it loads from a checkpoint that stores
draws, whatever builds the regressor (`make_regressor`, a plain `TabPFNRegressor`, a refit), and
say in one warning line, naming the device, when it first loads a model that draws on its device.
"""

import base64
import functools
import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors import SafetensorError, safe_open
from tabpfn import model_loading
from torch import nn

from retrofit.errors import RetrofitError

log = logging.getLogger(__name__)

HEADER_FIELD = "column_embeddings"
"""The checkpoint header field (safetensors) or top-level key (torch file) holding the draws."""

LAYER = "feature_positional_embedding_embeddings"
"""The v2 family's linear layer the draws go through."""

DRAW_SEEDS = {
    "tabpfn.architectures.tabpfn_v2": lambda model: int(model.seed),
    "tabpfn.architectures.tabpfn_v2_5": lambda model: 42,
    "tabpfn.architectures.tabpfn_v2_6": lambda model: 42,
}
"""The module of a v2-family model -> the seed its forward draws with (v2: its config's `seed`;
v2.5 and v2.6: tabpfn's fixed 42)."""


def cpu_draws(seed: int, width: int, columns: int) -> torch.Tensor:
    """(columns, width) float32: what tabpfn draws on the CPU for `columns` columns with `seed`."""
    return torch.randn((columns, width), generator=torch.Generator().manual_seed(seed))


def _offset(columns: int) -> int:
    """First row of the draw for `columns` columns in the stacked table (draws for 1, 2, ... columns)."""
    return columns * (columns - 1) // 2


@dataclass(frozen=True, eq=False)
class ColumnEmbeddings:
    """The draws of one host: for k = 1..`max_columns`, `table_TW[k(k-1)/2 : k(k+1)/2]` is the
    (k, width) draw with `seed` its training saw; `seed` also makes the draw of a larger count."""

    seed: int
    max_columns: int
    table_TW: torch.Tensor

    @classmethod
    def drawn(cls, seed: int, width: int, max_columns: int) -> "ColumnEmbeddings":
        """The CPU draws for 1..`max_columns` columns (what training on the CPU sees)."""
        table = torch.cat([cpu_draws(seed, width, k) for k in range(1, max_columns + 1)])
        return cls(seed, max_columns, table)

    @property
    def width(self) -> int:
        return self.table_TW.shape[1]

    def for_columns(self, columns: int) -> torch.Tensor:
        """(columns, width) float32 on the CPU: the stored draw, or the CPU draw above `max_columns`."""
        if columns > self.max_columns:
            return cpu_draws(self.seed, self.width, columns)
        return self.table_TW[_offset(columns) : _offset(columns + 1)]

    def to_header(self) -> dict[str, Any]:
        """A JSON-able form: the float32 table as little-endian bytes in base64 (exact)."""
        data = self.table_TW.to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        return dict(
            seed=self.seed, width=self.width, max_columns=self.max_columns, float32=base64.b64encode(data).decode()
        )

    @classmethod
    def from_header(cls, field: Any, where: str) -> "ColumnEmbeddings":
        """Inverse of `to_header`; RetrofitError naming `where` if `field` is not one."""
        try:
            seed, width, max_columns = int(field["seed"]), int(field["width"]), int(field["max_columns"])
            raw = bytearray(base64.b64decode(field["float32"], validate=True))
        except (KeyError, TypeError, ValueError) as exc:
            raise RetrofitError(
                f"{where}: header field {HEADER_FIELD!r} is not a table of column embeddings ({exc!r}); re-write "
                "the checkpoint with retrofit.hosts.save_host, or drop the field (tabpfn then draws on the device)"
            ) from None
        rows = _offset(max_columns + 1)
        if width < 1 or max_columns < 1 or len(raw) != rows * width * 4:
            raise RetrofitError(
                f"{where}: header field {HEADER_FIELD!r} holds {len(raw)} bytes, not the {rows} x {width} float32 "
                f"draws of 1..{max_columns} columns; re-write the checkpoint with retrofit.hosts.save_host"
            )
        table = torch.frombuffer(raw, dtype=torch.float32).view(rows, width).clone()
        return cls(seed, max_columns, table)


class StoredColumnEmbedding(nn.Linear):
    """The v2 family's `feature_positional_embedding_embeddings` fed stored draws.

    Holds the layer's own weight and bias (the state dict is the stock layer's) and `embeddings`.
    Its forward gets the (columns, width) draw the model just made on its device and returns the
    layer applied to `embeddings.for_columns(columns)` instead, in the draw's dtype and device.
    """

    def __init__(self, layer: nn.Linear, embeddings: ColumnEmbeddings) -> None:
        if layer.in_features != embeddings.width:
            raise RetrofitError(
                f"stored column embeddings have width {embeddings.width}, the model's {LAYER} takes "
                f"{layer.in_features}: they belong to another architecture; re-write the checkpoint"
            )
        nn.Module.__init__(self)
        self.in_features, self.out_features = layer.in_features, layer.out_features
        self.weight, self.bias = layer.weight, layer.bias
        self.embeddings = embeddings

    def forward(self, drawn_CW: torch.Tensor) -> torch.Tensor:
        stored_CW = self.embeddings.for_columns(drawn_CW.shape[0]).to(drawn_CW.device, drawn_CW.dtype)
        return F.linear(stored_CW, self.weight, self.bias)


def draws_on_device(model: nn.Module) -> bool:
    """Whether `model`'s forward adds column embeddings drawn on its device: a v2-family model
    whose layer is not a `StoredColumnEmbedding`, except v2.5 / v2.6 at the width of tabpfn's table."""
    if type(model).__module__ not in DRAW_SEEDS or isinstance(getattr(model, LAYER), StoredColumnEmbedding):
        return False
    published = getattr(model, "pre_generated_column_embeddings", None)
    return published is None or published.shape[1] != getattr(model, LAYER).in_features


def pin(model: nn.Module, embeddings: ColumnEmbeddings) -> nn.Module:
    """`model` (in place) with its column-embedding layer fed `embeddings`; a no-op if already pinned."""
    layer = getattr(model, LAYER)
    if not isinstance(layer, StoredColumnEmbedding):
        setattr(model, LAYER, StoredColumnEmbedding(layer, embeddings))
    return model


def pin_drawn(model: nn.Module, max_columns: int) -> nn.Module:
    """`model` pinned to the CPU draws of 1..`max_columns` columns with its own seed (a new host:
    random or about to be trained); unchanged if it draws nothing on its device."""
    if not draws_on_device(model):
        return model
    seed = DRAW_SEEDS[type(model).__module__](model)
    return pin(model, ColumnEmbeddings.drawn(seed, getattr(model, LAYER).in_features, max_columns))


def check_stored(model: nn.Module, path: str | os.PathLike) -> None:
    """RetrofitError, in one line, if the draws the checkpoint at `path` stores (if any) cannot feed
    `model`: unreadable, of another width, or stored for an architecture that draws none."""
    embeddings = stored(path)
    if embeddings is None:
        return
    if type(model).__module__ not in DRAW_SEEDS:
        raise RetrofitError(
            f"{path}: header field {HEADER_FIELD!r} stores column embeddings, but {type(model).__name__} adds none; "
            "drop the field or pass the checkpoint it belongs to"
        )
    if getattr(model, LAYER).in_features != embeddings.width:
        raise RetrofitError(
            f"{path}: its stored column embeddings have width {embeddings.width}, its model's {LAYER} takes "
            f"{getattr(model, LAYER).in_features}; drop the field or pass the checkpoint it belongs to"
        )


def carried(model: nn.Module) -> ColumnEmbeddings | None:
    """The draws `model` is pinned to, or None."""
    layer = getattr(model, LAYER, None)
    return layer.embeddings if isinstance(layer, StoredColumnEmbedding) else None


def stored(path: str | os.PathLike) -> ColumnEmbeddings | None:
    """The draws the checkpoint at `path` carries, None if it carries none; RetrofitError if unreadable."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            with safe_open(str(path), framework="pt", device="cpu") as fh:
                text = (fh.metadata() or {}).get(HEADER_FIELD)
            field = None if text is None else json.loads(text)
        else:
            field = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True).get(HEADER_FIELD)
    except (SafetensorError, OSError, pickle.UnpicklingError, RuntimeError, json.JSONDecodeError) as exc:
        raise RetrofitError(f"{path}: cannot read its column embeddings ({exc}); pass a readable checkpoint") from None
    return None if field is None else ColumnEmbeddings.from_header(field, str(path))


_WARNED: set[tuple[str, str]] = set()
"""(checkpoint, device) pairs already warned about in this process: one line each, not one per fit."""


def _warn_once(path: Path, device: str) -> None:
    """One warning line per checkpoint and device in a process: its model draws on `device`."""
    if (str(path), device) in _WARNED:
        return
    _WARNED.add((str(path), device))
    log.warning(
        "%s stores no column embeddings: tabpfn draws them on %s at every forward, so its predictions differ "
        "between CPU and GPU (docs/hosts.md, 'Column embeddings')",
        path.name,
        device,
    )


def _pinning(load_model):
    """tabpfn's `load_model` (keyword-only; returns (model, criterion, config, inference config)),
    followed by pinning the model to the draws its checkpoint stores, or a warning if it draws."""

    @functools.wraps(load_model)
    def load_and_pin(*, path, devices=None, **kwargs):
        model, *rest = load_model(path=path, devices=devices, **kwargs)
        embeddings = stored(path)
        if embeddings is not None:
            pin(model, embeddings)
        elif draws_on_device(model):
            _warn_once(Path(path), str(devices[0]) if devices else "cpu")
        return (model, *rest)

    load_and_pin.pins_column_embeddings = True
    return load_and_pin


if not getattr(model_loading.load_model, "pins_column_embeddings", False):
    model_loading.load_model = _pinning(model_loading.load_model)
