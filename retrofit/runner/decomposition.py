"""The retrofit cost split into its sink and presence effects: the arms, as extra units of a case.

A retrofitted OAttention departs from the stock host in two ways: presences
p = ||h||² / (tau + ||h||²) below 1 (tau = c · median ||h||² of the context carriers), and the sink
eps_den. With the paper's `absolute` sink, query i gives the sink the share eps_den / (eps_den + W_i),
which takes the mass where a trained host puts every logit of a query far below log eps_den; the
`relative` sink sits at log eps_den + log W_i, a constant share eps_den / (1 + eps_den) whatever
the logits. The arms of `retrofit/configs/decomposition/sink_presence.yaml` run each listed variant with
overrides that switch the two effects on or off (c as in the variant, or so small that every
non-null presence rounds to 1; absolute or relative sink). They are extra units of every case whose
seed is in the config's `seeds` (null: every case), on the case's one fit, so every arm is matched
against the same baseline prediction.

`with_arms` labels the units of a case: a unit that realises arm A of variant V carries
`arm=A` (the variant's own unit for an arm with no overrides; an extra, untimed unit with
`arm_extra=True` otherwise). The labels travel in each unit's record (`retrofit.results.record`),
so the aggregation tells arm rows apart by what the rows say, never by re-reading this config.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from retrofit.errors import RetrofitError, RunnerError
from retrofit.results.record import hparams_text
from retrofit.runner.case import UnitSpec
from retrofit.runner.schema import DecompositionConfig
from retrofit.typed import typed
from retrofit.variants import resolve_variant

ARMS_FILE = Path(str(files("retrofit.configs") / "decomposition" / "sink_presence.yaml"))
"""The arms of the paper table's decomposition (`+experiment=paper_table` selects them)."""


@dataclass(frozen=True)
class Decomposition:
    """Validated arms: every (variant, arm) resolves, and no two arms of a variant run the same
    settings. `seeds`: the seeds of the cases that run the extra arm units (None: every case)."""

    variants: tuple[str, ...]
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None

    @classmethod
    def from_node(cls, node: DictConfig | dict) -> "Decomposition":
        """From a config node (`DecompositionConfig`); RunnerError naming a bad key or arm."""
        cfg = OmegaConf.to_container(typed(DecompositionConfig, node, "decomposition", RunnerError), resolve=True)
        seeds = None if cfg["seeds"] is None else tuple(cfg["seeds"])
        arms = {name: dict(arm or {}) for name, arm in cfg["arms"].items()}
        decomposition = cls(tuple(cfg["variants"]), arms, seeds)
        for variant in decomposition.variants:
            settings = [decomposition.settings(variant, arm) for arm in decomposition.arms]
            if len(set(settings)) != len(settings):
                raise RunnerError(f"decomposition: two arms of {variant!r} run the same settings {settings}")
        return decomposition

    @classmethod
    def load(cls, path: Path = ARMS_FILE) -> "Decomposition":
        return cls.from_node(OmegaConf.load(path))

    def settings(self, variant: str, arm: str) -> tuple[float, float, str]:
        """(tau_c, eps_den, eps_mode) that `variant` runs with in `arm`; RunnerError if it does not
        resolve or its tau is not calibrated (arms are told apart by c)."""
        try:
            resolved = resolve_variant(variant, **self.arms[arm])
        except RetrofitError as err:
            raise RunnerError(f"decomposition arm {arm!r} of {variant!r}: {err}") from None
        if resolved.tau is None or resolved.tau.mode != "calibrated":
            raise RunnerError(f"decomposition arm {arm!r} of {variant!r}: needs a calibrated tau (arms differ by c)")
        return resolved.tau.c, resolved.eps_den, resolved.eps_mode

    def labelled(self, units: Sequence[UnitSpec], seed: int) -> tuple[UnitSpec, ...]:
        """`units` of the case with `seed`, with the arms of the decomposition variants among them:
        each arm's overrides on top of the variant unit's own; a unit that already runs them is
        labelled with the arm, any other is added as an untimed `arm_extra` unit after `units`
        (only when `seed` is in `seeds`: a case with another seed keeps its units unlabelled)."""
        if self.seeds is not None and seed not in self.seeds:
            return tuple(units)
        labelled = {(u.variant, hparams_text(u.hparams)): u for u in units}
        for unit in units:
            if unit.variant not in self.variants or unit.spec is not None:
                continue
            for arm, overrides in self.arms.items():
                hparams = {**unit.hparams, **overrides}
                key = (unit.variant, hparams_text(hparams))
                if key in labelled:
                    labelled[key] = replace(labelled[key], arm=arm)
                else:
                    labelled[key] = UnitSpec(unit.variant, hparams, timed=False, arm=arm, arm_extra=True)
        return tuple(labelled.values())


def with_arms(units: tuple[UnitSpec, ...], node: DictConfig | dict | None, seed: int) -> tuple[UnitSpec, ...]:
    """`units` of the case with `seed` labelled with the arms of the decomposition config `node`,
    extra arm units after them (None: `units` as they are)."""
    return units if node is None else Decomposition.from_node(node).labelled(units, seed)
