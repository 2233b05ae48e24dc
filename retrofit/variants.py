"""Variants: a list of adapters plus their hyper-parameters, typed by `VariantConfig`.

A variant has `name`, `adapters` (registered adapter names), `tau` (`mode` absolute with `value`, or
calibrated with `c`; see `retrofit.adapters.tau`), `eps_den`, `eps_mode` (OAttention's sink semantics,
`retrofit.ops.EPS_MODES`; absent means `absolute`), `compact` and `closed` (`true` O-closes the whole
model, from the raw input to the readout, not only the in-context blocks; `retrofit.adapters.closure`).
A variant without adapters (the baseline) needs no `tau`, `eps_den` or `eps_mode`.

The built-in variants are `retrofit/configs/variant/<name>.yaml` (package data; Hydra's `variant`
group reads the same files through `pkg://retrofit.configs`). Every spec, from a file, a dict or a
composed Hydra node, is checked against `VariantConfig`: an unknown key or a value of the wrong type
is a RetrofitError naming the key.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.adapters import PARTS, TauRule, adapter
from retrofit.errors import RetrofitError
from retrofit.ops import EPS_MODES

VARIANT_DIR = Path(str(files("retrofit.configs") / "variant"))
"""Where the built-in variant files live (inside the installed package)."""
HPARAMS = ("tau", "eps_den", "eps_mode", "compact")
"""The keys `retrofit.retrofit(..., **hparams)` may override."""


@dataclass
class TauConfig:
    """The tau rule as written in a variant: `mode` absolute reads `value`, calibrated reads `c`."""

    mode: str | None = None
    c: float | None = None
    value: float | None = None


@dataclass
class VariantConfig:
    """The schema of a variant spec (a file in `retrofit/configs/variant/`, a dict, a Hydra node)."""

    name: str | None = None
    adapters: list[str] = field(default_factory=list)
    tau: TauConfig | None = None
    eps_den: float | None = None
    eps_mode: str | None = None
    compact: bool = False
    closed: bool = False


@dataclass(frozen=True)
class Variant:
    """A validated variant: the adapters it applies (by name) and their hyper-parameters."""

    name: str
    adapters: tuple[str, ...]
    tau: TauRule | None
    eps_den: float | None
    compact: bool
    eps_mode: str | None = None  # None: nothing patched (the baseline)
    closed: bool = False

    @property
    def parts(self) -> frozenset[str]:
        """The block parts this variant replaces."""
        return frozenset(adapter(name).part for name in self.adapters)


def available_variants() -> list[str]:
    """Names of the built-in variants (files in `VARIANT_DIR`)."""
    return sorted(path.stem for path in VARIANT_DIR.glob("*.yaml"))


def load_variant(name: str) -> DictConfig:
    """The built-in spec `<VARIANT_DIR>/<name>.yaml`; RetrofitError listing the available names."""
    path = VARIANT_DIR / f"{name}.yaml"
    if not path.is_file():
        raise RetrofitError(f"unknown variant {name!r}; built-in: {available_variants()}; or pass a spec (a mapping)")
    return OmegaConf.load(path)


def typed_spec(spec: Mapping[str, Any] | DictConfig) -> dict[str, Any]:
    """`spec` checked against `VariantConfig`, with its defaults filled in, as a plain dict.

    Raises RetrofitError naming an unknown key or a value of the wrong type.
    """
    label = spec.get("name", "<unnamed>")
    try:
        typed = OmegaConf.merge(OmegaConf.structured(VariantConfig), spec)
    except OmegaConfBaseException as err:
        allowed = ", ".join(VariantConfig.__dataclass_fields__)
        raise RetrofitError(
            f"variant {label!r}: bad key {err.full_key!r} ({str(err).splitlines()[0]}); allowed keys: "
            f"{allowed}, tau.mode, tau.c, tau.value"
        ) from None
    return OmegaConf.to_container(typed, resolve=True)


def resolve_variant(variant: str | Mapping[str, Any] | DictConfig, **hparams: Any) -> Variant:
    """A `Variant` from a name or a spec (dict or OmegaConf), with `hparams` replacing its keys.

    `hparams` keys are those of `HPARAMS` (e.g. `tau={"mode": "calibrated", "c": 1e-2}`).
    Raises RetrofitError naming an unknown key, adapter, duplicate part or missing hyper-parameter.
    """
    unknown = sorted(set(hparams) - set(HPARAMS))
    if unknown:
        raise RetrofitError(f"unknown retrofit hyper-parameters {unknown}; allowed: {list(HPARAMS)}")
    raw = load_variant(variant) if isinstance(variant, str) else variant
    raw = OmegaConf.to_container(raw, resolve=True) if isinstance(raw, DictConfig) else dict(raw)
    spec = typed_spec({**raw, **hparams})
    names = tuple(spec["adapters"])
    parts = [adapter(name).part for name in names]
    if len(set(parts)) != len(parts):
        raise RetrofitError(f"variant {spec['name']!r} lists adapters {list(names)} that replace the same part twice")
    if not names:
        return Variant(spec["name"] or "baseline", (), None, None, spec["compact"], closed=spec["closed"])
    if spec["tau"] is None or spec["eps_den"] is None:
        raise RetrofitError(f"variant {spec['name']!r} patches {list(names)} and needs both 'tau' and 'eps_den'")
    rule = TauRule(**spec["tau"])
    name = spec["name"] or "+".join(names)
    ordered = tuple(sorted(names, key=lambda n: PARTS.index(adapter(n).part)))
    eps_mode = spec["eps_mode"] or "absolute"
    if eps_mode not in EPS_MODES:
        raise RetrofitError(f"variant {name!r}: eps_mode must be one of {EPS_MODES}, got {eps_mode!r}")
    return Variant(name, ordered, rule, float(spec["eps_den"]), spec["compact"], eps_mode, spec["closed"])
