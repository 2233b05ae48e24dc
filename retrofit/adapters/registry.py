"""Registries: which tabpfn architectures can be retrofitted, and the O parts a variant can list.

An `ArchitectureSpec` is data: where an architecture keeps its in-context blocks, which class
those blocks must be, and which wrapper (an `OBlock` subclass) reimplements the block's dataflow
with O parts (the wrapper names the submodules each part takes over). Architectures are the
extension point: `register_architecture` adds one (a duplicate is refused); each of the shipped
ones registers itself in its own module (`retrofit.adapters.tabpfn_v2`, `tabpfn_v3`,
`tabpfn_v3_5`), which importing `retrofit.adapters` imports.

`ADAPTERS` is not an extension point but a fixed vocabulary: the three names a variant lists
(`o_attention`, `o_ffn`, `o_norm`), each bound to the block part it replaces and the operator that
computes it. The computing is the wrappers': each runs the O operator of the parts its variant
lists (`OBlock.parts`) and the stock submodule otherwise, so a new kind of O part means a new
operator in `retrofit.ops` and its branch in every wrapper, not a registration.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from torch import nn

from retrofit.errors import RetrofitError

PARTS = ("attention", "ffn", "norm")
"""The block parts an adapter can replace, in the order a report lists them."""


@dataclass(frozen=True)
class ArchitectureSpec:
    """How one tabpfn architecture carries hidden carriers through its in-context stage.

    `module`: the python module defining it (`type(model).__module__`); `blocks`: dotted path
    of the `nn.ModuleList` of in-context blocks; `block_class`: the class name every block must
    have; `wrapper`: the `OBlock` subclass wrapping one block; `closed_wrapper`: the
    `OClosedModel` subclass closing the whole model (variants with `closed: true`), or None with
    `closed_refusal` saying why the architecture cannot be closed; `shared_stages`: the model method
    that computes every stage before the in-context blocks from its arguments and the modules
    outside those blocks, which models patching only the blocks compute alike
    (`retrofit.adapters.shared_stages`), "" when the architecture has none.
    """

    name: str
    module: str
    blocks: str
    block_class: str
    wrapper: type[nn.Module]
    closed_wrapper: type[nn.Module] | None = None
    closed_refusal: str = ""
    shared_stages: str = ""

    def refusal(self, variant: Any) -> str:
        """Why this architecture cannot run `variant` (anything with a `closed` flag, e.g. a
        `retrofit.variants.Variant`), "" when it can: a closed variant needs a `closed_wrapper`;
        without one the reason is `closed_refusal`. Every caller that refuses or skips a variant
        on a host asks here."""
        return self.closed_refusal if variant.closed and self.closed_wrapper is None else ""


@dataclass(frozen=True)
class AdapterSpec:
    """One O part: `name` (what a variant lists), the block `part` it replaces, its `operator`."""

    name: str
    part: str
    operator: str

    def __post_init__(self) -> None:
        if self.part not in PARTS:
            raise RetrofitError(f"adapter {self.name!r}: unknown part {self.part!r}; use one of {PARTS}")


ARCHITECTURES: dict[str, ArchitectureSpec] = {}


def register_architecture(spec: ArchitectureSpec) -> ArchitectureSpec:
    """Add `spec`; a second spec for the same name or module is refused."""
    clash = [s.name for s in ARCHITECTURES.values() if spec.name == s.name or spec.module == s.module]
    if clash:
        raise RetrofitError(
            f"ArchitectureSpec {spec.name!r} clashes with registered {clash[0]!r} (same name or module)"
        )
    ARCHITECTURES[spec.name] = spec
    return spec


ADAPTERS: MappingProxyType[str, AdapterSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            AdapterSpec(
                "o_attention",
                "attention",
                "retrofit.ops.o_attention: hidden-carrier OAttention (p_i gates, p_j weighs)",
            ),
            AdapterSpec("o_ffn", "ffn", "retrofit.ops.o_ffn: h + p * FFN(norm(h))"),
            AdapterSpec("o_norm", "norm", "retrofit.ops.o_norm: norm with its bias gated by p (0 -> 0)"),
        )
    }
)
"""The O parts a variant lists, by name: one per block part (read-only)."""


def architecture_of(model: nn.Module) -> ArchitectureSpec:
    """The spec of `model`'s architecture, found by the module defining its class.

    Raises RetrofitError naming the unsupported architecture and the supported ones.
    """
    module = type(getattr(model, "host_model", model)).__module__  # a whole-model wrapper answers for its host
    for spec in ARCHITECTURES.values():
        if spec.module == module:
            return spec
    supported = ", ".join(sorted(ARCHITECTURES))
    raise RetrofitError(
        f"cannot retrofit a {type(model).__name__} ({module}): its architecture has no adapter spec. "
        f"Supported architectures: {supported}. Use a host of one of them, or register an "
        "ArchitectureSpec for this one (retrofit.adapters.register_architecture)."
    )


def in_context_blocks(model: nn.Module) -> nn.Module:
    """The `nn.ModuleList` of `model`'s in-context blocks, read through a whole-model wrapper
    (`OClosedModel`) to the host model it wraps."""
    return getattr(model, "host_model", model).get_submodule(architecture_of(model).blocks)


def adapter(name: str) -> AdapterSpec:
    """The registered adapter `name`; RetrofitError listing the known ones otherwise."""
    if name not in ADAPTERS:
        raise RetrofitError(f"unknown adapter {name!r}; known adapters: {sorted(ADAPTERS)}")
    return ADAPTERS[name]
