"""`OBlock`: the base of the wrappers that put O parts into one tabpfn in-context block."""

from collections.abc import Callable
from typing import ClassVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from retrofit.adapters.in_context_attention import AttentionSettings
from retrofit.adapters.registry import PARTS
from retrofit.adapters.tau import TauRule
from retrofit.errors import RetrofitError
from retrofit.ops import o_norm
from retrofit.ops.presence import presence_ratio, squared_norm

KV_CACHE_REFUSAL = (
    "a retrofitted block cannot build or read tabpfn's KV cache: the cache keeps keys and values "
    "but not the hidden-carrier presence OAttention weighs them by. Fit the regressor with "
    "fit_mode='fit_preprocessors' (or 'low_memory') before retrofitting."
)

AttentionRecord = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int, int | None], None]
"""`record(q_BRHD, k_BNGD, p_BR, single_eval_pos, test_kv_heads)`: what `OBlock.probe_attention`
hands over per in-context attention call (queries of all R rows, keys of the N context rows,
presence of the rows' carriers, the test rows' key/value heads or None for all)."""


def unaccounted(block: nn.Module, required: dict[str, tuple[str, ...]]) -> list[str]:
    """Names of `block`'s parameters, buffers and submodules that `required` does not account for.

    `required` maps a (dotted) submodule path to the attributes read from it. Accounted for: a
    submodule listed with no attributes, and everything inside it; a listed attribute that is
    itself a submodule or parameter, and everything inside it; the listed submodules themselves,
    the submodules on their paths and `block`. A parameter or buffer held directly by a
    re-implemented submodule (one listed with attributes) is not, unless listed. Of an
    unaccounted submodule only its own name is given, not those of its contents.
    """
    whole = [name for name, attributes in required.items() if not attributes]
    whole += [f"{name}.{attribute}" for name, attributes in required.items() for attribute in attributes]
    containers = {""} | {name.rsplit(".", i)[0] for name in required for i in range(name.count(".") + 1)}

    def covered(path: str) -> bool:
        return path in containers or any(path == w or path.startswith(f"{w}.") for w in whole)

    names = [name for name, _ in block.named_modules()]
    names += [name for name, _ in block.named_parameters()] + [name for name, _ in block.named_buffers()]
    stray = [name for name in dict.fromkeys(names) if not covered(name)]
    return [name for name in stray if not any(name.startswith(f"{outer}.") for outer in stray)]


def _attribute(module: nn.Module, path: str) -> object | None:
    """`module.<path>` for a dotted `path`; None where any step is missing or None."""
    for name in path.split("."):
        module = getattr(module, name, None)
        if module is None:
            return None
    return module


class OBlock(nn.Module):
    """One in-context block of a frozen tabpfn model, with the O `parts` swapped in.

    The original block is kept unchanged as `base_layer` (unpatching puts it back); its own
    submodules compute everything the O parts leave alone, in the block's own order.
    Call signature: tabpfn's, `(x, single_eval_pos, save_peak_memory_factor=None, *,
    cached_kv=None, return_kv=False) -> (x, None)`; `x` may come in tabpfn v2's one-element list.
    The KV-cache paths are refused. Memory-saving chunking splits the batch axis for the block
    (every chunk holds whole batch elements, all rows: presence and tau, which are per batch
    element, are the same as unchunked) and the tokens for its per-token FFN branch, whose
    presences are computed on the whole carrier first.

    Hooks for subclasses: `_forward_batch([x], single_eval_pos)`, the block on whole batch
    elements; `probe_attention(record)`, the sink diagnostics' view of the block. `required`
    maps each (dotted) submodule path the wrapper reads to the attributes it reads there; checked
    at build time.
    It is also what the wrapper accounts for: a submodule listed with no attributes is run as a
    whole (everything inside it is accounted for), one listed with attributes is re-implemented
    from those attributes only (each an attribute or a submodule run as a whole). A block holding
    any other parameter, buffer or submodule is refused by name (`unaccounted`): the wrapper
    would silently compute something other than the block. `part_modules` maps every part to
    the submodules of `required` its O operator replaces; `replaced` lists those this wrapper
    actually computes with an O operator. `tau` and `attention` (OAttention's settings, checked
    by `AttentionSettings` itself) come from a `retrofit.variants.Variant`.
    """

    required: ClassVar[dict[str, tuple[str, ...]]] = {}
    part_modules: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        unmapped = [part for part in PARTS if part not in cls.part_modules]
        unread = [name for names in cls.part_modules.values() for name in names if name not in cls.required]
        if unmapped or unread:
            raise RetrofitError(
                f"{cls.__name__}.part_modules must map every part in {PARTS} to submodules listed in `required`; "
                f"unmapped parts {unmapped}, submodules not in `required` {unread}"
            )

    def __init__(
        self,
        base_layer: nn.Module,
        parts: frozenset[str],
        tau: TauRule,
        attention: AttentionSettings,
    ):
        super().__init__()
        unknown = set(parts) - set(PARTS)
        if unknown or not parts:
            raise RetrofitError(
                f"{type(self).__name__}: parts must be a non-empty subset of {PARTS}, got {sorted(parts)}"
            )
        for name, attributes in self.required.items():
            module = _attribute(base_layer, name)
            missing = [a for a in attributes if not hasattr(module, a)]
            if module is None or missing:
                raise RetrofitError(
                    f"{type(self).__name__} cannot wrap {type(base_layer).__name__}: submodule {name!r} "
                    f"missing or lacks {missing}; this tabpfn version's block layout differs from the "
                    "registered ArchitectureSpec, so update the spec and wrapper."
                )
        stray = unaccounted(base_layer, self.required)
        if stray:
            raise RetrofitError(
                f"{type(self).__name__} cannot wrap {type(base_layer).__name__}: it holds {stray}, which the "
                "wrapper does not account for (it would run without them and compute something else); this "
                "tabpfn version's block differs from the registered ArchitectureSpec, so update the spec and "
                "wrapper (`required` lists what a wrapper reads)."
            )
        if not isinstance(attention, AttentionSettings):
            raise RetrofitError(
                f"{type(self).__name__}: attention must be an AttentionSettings (eps_den, eps_mode, compact), "
                f"got {type(attention).__name__}"
            )
        self.base_layer = base_layer
        self.parts = frozenset(parts)
        self.tau = tau
        self.attention = attention

    @property
    def replaced(self) -> tuple[tuple[str, str], ...]:
        """(part, submodule name) of every base submodule this wrapper computes with an O operator.

        Every submodule of a patched attention or FFN part; of a patched norm part only the norms
        with a bias: ONorm gates the bias, and a norm without one (RMSNorm, a LayerNorm without
        bias or elementwise affine) already maps 0 to 0 and is left as it is (see `o_norm`).
        """
        return tuple(
            (part, name)
            for part in PARTS
            if part in self.parts
            for name in self.part_modules[part]
            if part != "norm" or getattr(self.base_layer.get_submodule(name), "bias", None) is not None
        )

    def forward(
        self,
        x: torch.Tensor | list[torch.Tensor],
        single_eval_pos: int,
        save_peak_memory_factor: int | None = None,
        *,
        cached_kv: object | None = None,
        return_kv: bool = False,
    ) -> tuple[torch.Tensor, None]:
        if cached_kv is not None or return_kv:
            raise RuntimeError(KV_CACHE_REFUSAL)
        # Held in a one-element list that `_forward_batch` empties, as tabpfn's blocks take their
        # input: no frame keeps the block's input alive once the block has used it.
        container = [x.pop(0)] if isinstance(x, list) else [x]
        del x
        R = container[0].shape[1]
        if not 0 < single_eval_pos <= R:
            raise RetrofitError(
                f"{type(self).__name__}: single_eval_pos={single_eval_pos} must count 1..{R} "
                "context rows; OAttention needs the train rows in the same call as the test rows."
            )
        factor = save_peak_memory_factor
        if factor is None:
            return self._forward_batch(container, single_eval_pos, None), None
        x = container.pop()
        chunk = -(-x.shape[0] // factor)
        return torch.cat([self._forward_batch([x_b], single_eval_pos, factor) for x_b in x.split(chunk)]), None

    def _forward_batch(
        self, x_container: list[torch.Tensor], single_eval_pos: int, save_peak_memory_factor: int | None
    ) -> torch.Tensor:
        """The block on whole batch elements: the carriers come as the one element of
        `x_container`, which this pops (so that they can be freed once used). With
        `save_peak_memory_factor`, per-token work (the FFN branch) runs in that many chunks of the
        tokens, as tabpfn runs its MLPs (`retrofit.adapters.chunks`)."""
        raise NotImplementedError

    def probe_attention(self, record: AttentionRecord) -> list[RemovableHandle]:
        """Hooks on the stock `base_layer` (not on this wrapper) that hand `record`, at every call of
        its in-context attention, the queries, keys and presences the O attention would compute
        from the stock block's carriers (this wrapper's tau; the carriers are not changed). For
        diagnostics on an unpatched model (`retrofit.audit.sink`); returns the hook handles."""
        raise NotImplementedError

    def _presence(self, h_BRxE: torch.Tensor, single_eval_pos: int, rows_dim: int = 1) -> torch.Tensor:
        """Presence (B, R, ...) of hidden carriers (B, R, ..., E), tau from the context rows (one
        squared norm per carrier serves both). `rows_dim`: the axis of the rows (e.g. 2 for
        carriers laid out (B, C, R, E)); tau is a median, which no layout changes. The tau rule's
        value is finite and > 0 by construction, so no check (and no synchronisation) runs here."""
        sq_BRx = squared_norm(h_BRxE)
        context_BX = sq_BRx.narrow(rows_dim, 0, single_eval_pos)
        if sq_BRx.dim() == 2:
            return presence_ratio(sq_BRx, self.tau.tau_of_squared(context_BX, keepdim=True))
        B = h_BRxE.shape[0]
        tau_B = self.tau.tau_of_squared(context_BX.reshape(B, -1))
        return presence_ratio(sq_BRx, tau_B.view(B, *(1,) * (sq_BRx.dim() - 1)))

    def _norm(
        self,
        norm: nn.Module,
        h_BRxE: torch.Tensor,
        single_eval_pos: int,
        p_BRx: torch.Tensor | None = None,
        rows_dim: int = 1,
    ) -> torch.Tensor:
        """`norm(h)`; ONorm (bias gated by the presence of h) when the norm part is patched. `p_BRx`:
        the presence of h if already computed (`_presence(h, single_eval_pos, rows_dim)`), else
        computed here."""
        if "norm" not in self.parts:
            return norm(h_BRxE)
        p_BRx = self._presence(h_BRxE, single_eval_pos, rows_dim) if p_BRx is None else p_BRx
        return o_norm(h_BRxE, p_BRx, norm)
