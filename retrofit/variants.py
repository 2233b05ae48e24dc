"""Variants: a list of adapters plus their hyper-parameters, typed by `VariantConfig`.

A variant has `name`, `adapters` (registered adapter names), `tau` (`mode` absolute with `value`, or
calibrated with `c`; see `retrofit.adapters.tau`; a bare number is `c` of the calibrated rule,
`tau_rule`), `eps_den`, `eps_mode` (OAttention's sink semantics, `retrofit.ops.EPS_MODES`), `compact`
and `closed` (`true` O-closes the whole model, from the raw input to the readout, not only the
in-context blocks; `retrofit.adapters.closed_model`). `VariantConfig` holds the defaults of every key
but `adapters`, which a variant must list (`[]` for the stock host); a variant without adapters (the
baseline) uses no `tau`, `eps_den` or `eps_mode`.

The built-in variants are `retrofit/configs/variant/<name>.yaml` (package data; Hydra's `variant`
group reads the same files through `pkg://retrofit.configs`). A variant is given by built-in name,
as a spec (a mapping), or explicitly as a file: a `pathlib.Path` or a string ending in `.yaml`/`.yml`,
reported under its file name's stem (`mine` for `mine.yaml`), as the sweep reports the same file
found by its name; a stem that is a built-in's name is refused. Every spec, from a file, a dict
or a composed Hydra node, is checked against `VariantConfig`: an unknown key or a value of the wrong
type is a RetrofitError naming the key. Every `Variant` checks its own settings once, wherever it came
from: its tau rule is a `retrofit.adapters.TauRule`, its `eps_den`, `eps_mode` and `compact` are one
`retrofit.adapters.AttentionSettings` (`Variant.attention`), which every wrapper it builds takes.
"""

import copy
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib.resources import files
from numbers import Real
from pathlib import Path
from typing import Any

import yaml
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.adapters import PARTS, AttentionSettings, TauRule, adapter
from retrofit.bounds import check_yaml_values
from retrofit.errors import RetrofitError, bounded
from retrofit.labels import check_label
from retrofit.typed import typed

VARIANT_DIR = Path(str(files("retrofit.configs") / "variant"))
"""Where the built-in variant files live (inside the installed package)."""
HPARAMS = ("tau", "eps_den", "eps_mode", "compact")
"""The keys `retrofit.retrofit(..., **hparams)` may override."""
VARIANT_FILE_SUFFIXES = (".yaml", ".yml")
"""A variant string with one of these endings is the path of a variant file."""


@dataclass
class TauConfig:
    """The tau rule as written in a variant: `mode` absolute reads `value`, calibrated reads `c`."""

    mode: str | None = None
    c: float | None = None
    value: float | None = None


TAU_KEYS = tuple(f.name for f in fields(TauConfig))
"""The keys of a tau rule."""


def tau_rule(tau: Any) -> Any:
    """The one form of a variant's `tau`: a bare number is `c` of the calibrated rule (`0.01` is
    `{"mode": "calibrated", "c": 0.01}`); a rule (a mapping or config node) or None is returned as
    given, for `VariantConfig` and `TauRule` to check. RetrofitError for anything else (a string, a bool)."""
    if tau is None or isinstance(tau, Mapping | DictConfig):
        return tau
    if isinstance(tau, Real) and not isinstance(tau, bool):
        return {"mode": "calibrated", "c": float(tau)}
    raise RetrofitError(
        f"tau must be a number (c of the calibrated rule: tau=0.01 is {{mode: calibrated, c: 0.01}}) or a rule "
        f"{{mode: calibrated, c: <number>}} / {{mode: absolute, value: <number>}}; got {bounded(repr(tau), 100)}"
    )


def with_tau_rule(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` (a variant spec or hyper-parameter overrides) with its `tau`, if any, in the one form of `tau_rule`."""
    return {**spec, "tau": tau_rule(spec["tau"])} if "tau" in spec else dict(spec)


@dataclass
class VariantConfig:
    """The schema of a variant spec and its defaults, the one place they are written: every spec (a
    built-in file, a file of the checkout or a search-path folder, a file given by path, a dict, a
    Hydra node) is merged onto it (`typed_spec`), so a key it omits means the same wherever it comes
    from. `adapters` has no default: what a variant replaces is never implied. `name` absent: the
    file's stem, else the adapters joined by `+`. A `tau` rule given replaces the default rule
    whole (its omitted keys are null, never the default's `c`)."""

    name: str | None = None
    adapters: list[str] = MISSING
    tau: TauConfig | None = field(default_factory=lambda: TauConfig(mode="calibrated", c=1e-3))
    eps_den: float | None = 1e-6
    eps_mode: str | None = "absolute"
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

    def __post_init__(self) -> None:
        """A variant that patches anything needs a tau rule (`TauRule` checks its own number) and
        OAttention settings that `AttentionSettings` accepts; RetrofitError naming the key otherwise."""
        if not self.adapters:
            return
        if not isinstance(self.tau, TauRule):
            raise RetrofitError(f"variant {self.name!r} patches {list(self.adapters)} and needs a 'tau' rule")
        try:
            self.attention  # noqa: B018  (built once, checked once)
        except RetrofitError as err:
            raise RetrofitError(f"variant {self.name!r}: {err}") from None

    @functools.cached_property
    def attention(self) -> AttentionSettings | None:
        """OAttention's settings (`eps_den`, `eps_mode`, `compact`) for every wrapper this variant
        builds; None for a variant that patches nothing (the baseline)."""
        return AttentionSettings(self.eps_den, self.eps_mode, self.compact) if self.adapters else None

    @property
    def hparams_used(self) -> tuple[str, ...]:
        """The keys of `HPARAMS` that change what this variant computes: none for a variant that
        patches nothing; `tau` for any O part; OAttention's settings (`eps_den`, `eps_mode`,
        `compact`) where OAttention runs (an `attention` adapter, or the closed column stage)."""
        if not self.adapters:
            return ()
        attends = self.closed or "attention" in self.parts
        return HPARAMS if attends else ("tau",)

    @property
    def parts(self) -> frozenset[str]:
        """The block parts this variant replaces."""
        return frozenset(adapter(name).part for name in self.adapters)


def check_hparams_used(variant: Variant, hparams: Mapping[str, Any], what: str, drop: str) -> None:
    """RetrofitError "<what>: variant ... does not use <key>=<value> ..." for the first key of
    `hparams` that `variant` does not use (`Variant.hparams_used`: `tau` on `baseline`), which would
    be accepted and change nothing; `drop` says how the caller leaves it out ("{key}" is the key)."""
    unused = [key for key in hparams if key not in variant.hparams_used]
    if unused:
        key = unused[0]
        raise RetrofitError(
            f"{what}: variant {variant.name!r} does not use {key}={hparams[key]!r} (it uses "
            f"{list(variant.hparams_used) or 'no hyper-parameter'}); {drop.format(key=key)}, or give it to a variant "
            "that patches (oa_only, full_o, o_closed)"
        )


def available_variants() -> list[str]:
    """Names of the built-in variants (files in `VARIANT_DIR`)."""
    return sorted(path.stem for path in VARIANT_DIR.glob("*.yaml"))


def load_variant(name: str) -> DictConfig:
    """The built-in spec `<VARIANT_DIR>/<name>.yaml`; RetrofitError listing the available names.

    `name` is a name, never a path: "../x" or "/tmp/x" is refused, not looked up."""
    return OmegaConf.create(_builtin_text(name))


def _builtin_text(name: str) -> str:
    """The text of the built-in variant file of `name` (see `load_variant`)."""
    if name not in available_variants():
        raise RetrofitError(
            f"unknown variant {bounded(name, 200)!r}; built-in: {available_variants()}; or pass a spec (a mapping), "
            f"or the path of a variant file ending in {' or '.join(VARIANT_FILE_SUFFIXES)}"
        )
    return (VARIANT_DIR / f"{name}.yaml").read_text()


@functools.lru_cache(maxsize=64)
def _builtin_spec(text: str) -> dict[str, Any]:
    """The resolved plain spec a built-in variant file's `text` holds, parsed once per text."""
    return OmegaConf.to_container(OmegaConf.create(text), resolve=True)


def load_variant_file(path: str | os.PathLike) -> dict[str, Any]:
    """The spec in the variant file `path`, named after the file's stem (`mine` for `mine.yaml`), as
    the sweep names `variant/mine.yaml` (`variant=mine`), so one file is one name on the command
    line and in Python. Its `name` key may be absent, the stem or the file name. RetrofitError for
    a missing or malformed file, a stem that is a built-in variant's name (its results would read
    as the built-in's), or a `name` key that says another name (drop the key or set it to the stem)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise RetrofitError(f"variant file {path} does not exist; pass an existing .yaml file, or a built-in name")
    if path.stem in available_variants():
        raise RetrofitError(
            f"variant file {path} would be reported as {path.stem!r}, the name of a built-in variant; "
            f"rename the file (e.g. {path.stem}_mine{path.suffix})"
        )
    try:
        check_yaml_values(path.read_text(encoding="utf-8"), f"variant file {path}")
        loaded = OmegaConf.load(path)
        spec = OmegaConf.to_container(loaded, resolve=True)
    except (yaml.YAMLError, OmegaConfBaseException, OSError, UnicodeDecodeError) as err:
        raise RetrofitError(f"variant file {path} is not readable YAML ({bounded(str(err))})") from None
    if not isinstance(spec, dict):
        raise RetrofitError(f"variant file {path} holds a {type(spec).__name__}, not a mapping of variant keys")
    if spec.get("name") not in (None, path.name, path.stem):
        raise RetrofitError(
            f"variant file {path} calls itself {spec['name']!r}; a variant from a file is reported under its file "
            f"name's stem {path.stem!r}: drop its `name` key or set it to {path.stem!r}"
        )
    return {**spec, "name": path.stem}


def variant_spec(variant: str | os.PathLike | Mapping[str, Any] | DictConfig) -> dict[str, Any]:
    """The raw spec (a plain dict) `variant` stands for: a built-in name, a variant file (a
    `pathlib.Path`, or a string ending in `.yaml`/`.yml`), or a spec itself; RetrofitError otherwise."""
    if isinstance(variant, os.PathLike) or (isinstance(variant, str) and variant.endswith(VARIANT_FILE_SUFFIXES)):
        return load_variant_file(variant)
    if isinstance(variant, str):
        return copy.deepcopy(_builtin_spec(_builtin_text(variant)))
    if isinstance(variant, DictConfig):
        return OmegaConf.to_container(variant, resolve=True)
    if isinstance(variant, Mapping):
        return dict(variant)
    raise RetrofitError(
        f"a variant is a built-in name ({available_variants()}), a spec (a mapping), or a .yaml variant file; "
        f"got {type(variant).__name__} {bounded(repr(variant), 100)}"
    )


def typed_spec(spec: Mapping[str, Any] | DictConfig) -> dict[str, Any]:
    """`spec` checked against `VariantConfig`, with its defaults filled in, as a plain dict (a new
    one per call). A sweep checks the same few specs for every job, so each spec (as plain values,
    interpolations as written) is checked once per process.

    A bare-number `tau` becomes its calibrated rule first (`tau_rule`). Raises RetrofitError naming
    an unknown key, a value of the wrong type, a missing `adapters`, or a `name` that is not a label
    (`retrofit.labels`: a variant's name labels results and names unit files).
    """
    plain = OmegaConf.to_container(spec) if OmegaConf.is_config(spec) else spec
    plain = with_tau_rule(plain) if isinstance(plain, Mapping) else plain
    try:
        key = json.dumps(plain, sort_keys=True, allow_nan=True)
    except TypeError:  # a value plain YAML cannot hold: checked (and refused) by the schema, uncached
        return _typed_spec(plain)
    return copy.deepcopy(_typed_spec_of(key))


@functools.lru_cache(maxsize=256)
def _typed_spec_of(key: str) -> dict[str, Any]:
    """`_typed_spec` of the spec whose canonical JSON is `key`, checked once per key."""
    return _typed_spec(json.loads(key))


def _typed_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    label = spec.get("name", "<unnamed>")
    if isinstance(spec.get("adapters"), str):  # the schema's own refusal speaks of an AnyNode
        raise RetrofitError(
            f"variant {label!r}: adapters must be a list of adapter names, got the string {spec['adapters']!r}; "
            f"write adapters: [{spec['adapters']}]"
        )
    tau = spec.get("tau")
    whole = {**spec, "tau": {**dict.fromkeys(TAU_KEYS), **tau}} if isinstance(tau, Mapping) else spec
    typed_node = typed(VariantConfig, whole, f"variant {label!r}")
    if OmegaConf.is_missing(typed_node, "adapters"):
        raise RetrofitError(
            f"variant {label!r} has no 'adapters': list the registered adapters it applies, e.g. "
            "adapters: [o_attention] ([] for the stock host)"
        )
    if typed_node.name is not None:
        check_label("variant name", typed_node.name)
    return OmegaConf.to_container(typed_node, resolve=True)


def resolve_variant(variant: str | os.PathLike | Mapping[str, Any] | DictConfig, **hparams: Any) -> Variant:
    """A `Variant` from a name, a variant file or a spec (dict or OmegaConf; see `variant_spec`),
    with `hparams` replacing its keys.

    `hparams` keys are those of `HPARAMS` (e.g. `tau=1e-2`, `c` of the calibrated rule, or
    `tau={"mode": "absolute", "value": 1.0}`).
    Raises RetrofitError naming an unknown key, adapter, duplicate part or missing hyper-parameter.
    """
    unknown = sorted(set(hparams) - set(HPARAMS))
    if unknown:
        raise RetrofitError(f"unknown retrofit hyper-parameters {unknown}; allowed: {list(HPARAMS)}")
    spec = typed_spec({**variant_spec(variant), **hparams})
    names = tuple(spec["adapters"])
    parts = [adapter(name).part for name in names]
    if len(set(parts)) != len(parts):
        raise RetrofitError(f"variant {spec['name']!r} lists adapters {list(names)} that replace the same part twice")
    if not names:
        return Variant(spec["name"] or "baseline", (), None, None, spec["compact"], closed=spec["closed"])
    name = spec["name"] or "+".join(names)
    unset = [key for key in ("tau", "eps_den", "eps_mode") if spec[key] is None]
    if unset:
        default = OmegaConf.to_container(OmegaConf.structured(VariantConfig))[unset[0]]
        default = {k: v for k, v in default.items() if v is not None} if isinstance(default, dict) else default
        raise RetrofitError(
            f"variant {name!r} patches {list(names)} and sets {unset[0]}: null; give it a value, or drop the key "
            f"for its default ({unset[0]}: {default})"
        )
    ordered = tuple(sorted(names, key=lambda n: PARTS.index(adapter(n).part)))
    return Variant(
        name, ordered, TauRule(**spec["tau"]), spec["eps_den"], spec["compact"], spec["eps_mode"], spec["closed"]
    )
