"""What `retrofit` did, read off the models as they are: `RetrofitReport` and `report_of`."""

from dataclasses import dataclass

from torch import nn

from retrofit.adapters import ADAPTERS, PARTS, OBlock, OClosedModel, architecture_of
from retrofit.variants import Variant


@dataclass(frozen=True)
class PatchedModule:
    """One host submodule an O operator took over: its dotted path in the model, the part, the
    adapter and the operator (`AdapterSpec.operator`) that now computes it."""

    model_index: int
    path: str
    part: str
    adapter: str
    operator: str


@dataclass(frozen=True)
class RetrofitReport:
    """What `retrofit` did: the variant, the architectures, the wrapped blocks, every submodule taken over.

    `blocks` and `patched` are read off the wrappers in the models (`OBlock.replaced`), not off a
    table of what a variant means to swap: a norm that already maps 0 to 0 (RMSNorm, a LayerNorm
    without bias) is left to the host and not listed.
    """

    variant: Variant
    architectures: tuple[str, ...]
    blocks: tuple[str, ...]
    patched: tuple[PatchedModule, ...]
    closed: tuple[str, ...] = ()
    """`<model index>:<stage>` of every host stage outside the in-context blocks that a whole-model
    wrapper (`OClosedModel`, a `closed` variant) re-implements with O operators."""

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
            f"eps_mode={self.variant.eps_mode}, compact={self.variant.compact}"
            + (f"; whole model closed ({len(self.closed)} stages outside the blocks)" if self.closed else "")
        )


def report_of(variant: Variant, models: list[nn.Module]) -> RetrofitReport:
    """The report of `variant` on `models` as they are: every O wrapper and what it replaced."""
    adapters = {spec.part: spec for spec in ADAPTERS.values()}
    wrapped = [
        (i, name, m) for i, model in enumerate(models) for name, m in model.named_modules() if isinstance(m, OBlock)
    ]
    return RetrofitReport(
        variant=variant,
        architectures=tuple(dict.fromkeys(architecture_of(model).name for model in models)),
        blocks=tuple(f"{i}:{name}" for i, name, _ in wrapped),
        patched=tuple(
            PatchedModule(i, f"{name}.{module}", part, adapters[part].name, adapters[part].operator)
            for i, name, wrapper in wrapped
            for part, module in wrapper.replaced
        ),
        closed=tuple(
            f"{i}:{stage}"
            for i, model in enumerate(models)
            if isinstance(model, OClosedModel)
            for stage in model.closed_stages
        ),
    )
