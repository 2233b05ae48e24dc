"""Variants: a YAML list of adapters plus their hyper-parameters, read from `configs/variant/`.

A variant file has `name`, `adapters` (registered adapter names), `tau` (`mode` absolute with
`value`, or calibrated with `c`; see `retrofit.adapters.tau`), `eps_den`, `eps_mode` (OAttention's sink
semantics, `retrofit.ops.EPS_MODES`; absent means `absolute`) and `compact`. A variant without adapters
(the baseline) needs no `tau`, `eps_den` or `eps_mode`.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from retrofit.adapters import PARTS, TauRule, adapter
from retrofit.errors import RetrofitError
from retrofit.ops import EPS_MODES

VARIANT_DIR = Path(__file__).resolve().parents[1] / "configs" / "variant"
HPARAMS = ("tau", "eps_den", "eps_mode", "compact")
"""The keys `retrofit.retrofit(..., **hparams)` may override."""


@dataclass(frozen=True)
class Variant:
    """A validated variant: the adapters it applies (by name) and their hyper-parameters."""

    name: str
    adapters: tuple[str, ...]
    tau: TauRule | None
    eps_den: float | None
    compact: bool
    eps_mode: str | None = None  # None: nothing patched (the baseline)

    @property
    def parts(self) -> frozenset[str]:
        """The block parts this variant replaces."""
        return frozenset(adapter(name).part for name in self.adapters)


def available_variants() -> list[str]:
    """Names of the variant files in `configs/variant/`."""
    return sorted(path.stem for path in VARIANT_DIR.glob("*.yaml"))


def load_variant(name: str) -> DictConfig:
    """The spec in `configs/variant/<name>.yaml`; RetrofitError listing the available names."""
    path = VARIANT_DIR / f"{name}.yaml"
    if not path.is_file():
        raise RetrofitError(f"unknown variant {name!r}; available: {available_variants()} (files in {VARIANT_DIR})")
    return OmegaConf.load(path)


def resolve_variant(variant: str | Mapping[str, Any] | DictConfig, **hparams: Any) -> Variant:
    """A `Variant` from a name or a spec (dict or OmegaConf), with `hparams` overriding its keys.

    `hparams` keys are those of `HPARAMS` (e.g. `tau={"mode": "calibrated", "c": 1e-2}`).
    Raises RetrofitError naming an unknown key, adapter, duplicate part or missing hyper-parameter.
    """
    spec = load_variant(variant) if isinstance(variant, str) else variant
    if isinstance(spec, DictConfig):
        spec = OmegaConf.to_container(spec, resolve=True)
    unknown = sorted(set(hparams) - set(HPARAMS))
    if unknown:
        raise RetrofitError(f"unknown retrofit hyper-parameters {unknown}; allowed: {list(HPARAMS)}")
    spec = {**spec, **hparams}
    extra = sorted(set(spec) - {"name", "adapters", *HPARAMS})
    if extra:
        raise RetrofitError(f"variant {spec.get('name')!r} has unknown keys {extra}; allowed: name, adapters, {', '.join(HPARAMS)}")
    names = tuple(spec.get("adapters") or ())
    parts = [adapter(name).part for name in names]
    if len(set(parts)) != len(parts):
        raise RetrofitError(f"variant {spec.get('name')!r} lists adapters {list(names)} that replace the same part twice")
    if not names:
        return Variant(str(spec.get("name", "baseline")), (), None, None, bool(spec.get("compact", False)))
    if spec.get("tau") is None or spec.get("eps_den") is None:
        raise RetrofitError(f"variant {spec.get('name')!r} patches {list(names)} and needs both 'tau' and 'eps_den'")
    tau = dict(spec["tau"])
    rule = TauRule(mode=tau.pop("mode", None), value=tau.pop("value", None), c=tau.pop("c", None))
    if tau:
        raise RetrofitError(f"tau has unknown keys {sorted(tau)}; use mode, value (absolute), c (calibrated)")
    name = str(spec.get("name", "+".join(names)))
    ordered = tuple(sorted(names, key=lambda n: PARTS.index(adapter(n).part)))
    eps_mode = spec.get("eps_mode") or "absolute"
    if eps_mode not in EPS_MODES:
        raise RetrofitError(f"variant {name!r}: eps_mode must be one of {EPS_MODES}, got {eps_mode!r}")
    return Variant(name, ordered, rule, float(spec["eps_den"]), bool(spec.get("compact", False)), eps_mode)
