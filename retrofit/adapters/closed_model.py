"""Whole-model closure: the wrapper an architecture registers for it, or the reason it has none.

A variant with `closed: true` O-closes every stage outside the in-context blocks too (input
statistics, embeddings, column stage, label injection, readout). The architecture's spec names
the `OClosedModel` subclass that does it (`closed_wrapper`) or says why it cannot
(`closed_refusal`); `close_model` builds the wrapper in the check phase of patching, before
anything is swapped.
"""

from typing import Any, ClassVar

from torch import nn

from retrofit.adapters.registry import PARTS, architecture_of
from retrofit.errors import RetrofitError


class OClosedModel(nn.Module):
    """Base of whole-model O wrappers: `base_layer` is the host model, kept unchanged.

    Attribute reads the wrapper does not answer go to `base_layer` (tabpfn's inference engine
    reads e.g. `estimator_batch_budget`), so the wrapper stands in for the model in
    `regressor.models_` and in the engine; unpatching puts `base_layer` back.
    """

    closed_stages: ClassVar[tuple[str, ...]] = ()
    """The host submodules (outside the in-context blocks) whose dataflow this wrapper re-implements
    with O operators; the retrofit report lists them."""

    def __init__(self, base_layer: nn.Module):
        super().__init__()
        self.base_layer = base_layer

    @property
    def host_model(self) -> nn.Module:
        """The wrapped host model (`architecture_of` reads its architecture off it)."""
        return self.base_layer

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "base_layer":
                raise
            return getattr(self.base_layer, name)


def close_model(model: nn.Module, variant: Any) -> OClosedModel:
    """`model` wrapped by its architecture's closed wrapper with `variant`'s OAttention settings.

    Raises RetrofitError when the architecture has no closure (its spec says why) or when the
    variant leaves an in-context part stock (a closed model needs every part of `PARTS`).
    """
    arch = architecture_of(model)
    if arch.refusal(variant):
        raise RetrofitError(f"variant {variant.name!r} closes the whole model, but {arch.refusal(variant)}")
    missing = sorted(set(PARTS) - set(variant.parts))
    if missing:
        raise RetrofitError(
            f"variant {variant.name!r} closes the whole model but leaves the in-context parts {missing} stock; "
            "list the adapters o_attention, o_ffn and o_norm too"
        )
    return arch.closed_wrapper(model, attention=variant.attention)
