"""From a composed Hydra config (`configs/config.yaml`, `configs/tau_sweep.yaml`) to `Case`s.

Variants: no `variant` choice runs every variant on Hydra's search path; `variant=<name>` runs
`baseline` and that one, `variant=[a,b]` baseline and those (one fit); `-m variant=a,b` one job
per variant, sharing the case's baseline unit. The composed node runs, so `variant.<key>=<value>`
takes effect: a key of `retrofit.variants.HPARAMS` on a built-in variant becomes a hyper-parameter
override (part of the unit's key); any other key of a built-in variant is refused, since it would
change what the name means. A closed variant on a host whose architecture cannot close the whole
model is left out of that host's cases, and the log says so. Relative paths are resolved against
the directory the command started in (`hydra.runtime.cwd`).
"""

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from retrofit.adapters import ARCHITECTURES
from retrofit.data import DatasetSpec
from retrofit.data.spec import LABEL
from retrofit.errors import RetrofitError, RunnerError
from retrofit.hosts import check_checkpoint, get_path
from retrofit.hosts.regressor import resolve_device
from retrofit.hosts.validation import architecture_name
from retrofit.labels import check_label
from retrofit.runner.case import Case, UnitSpec
from retrofit.runner.compose import group_option, variant_nodes
from retrofit.runner.decomposition import with_arms
from retrofit.runner.guard import outside_record
from retrofit.runner.schema import (
    HostConfig,
    SweepConfig,
    TimingConfig,
    job_config,
    output_dir,
    resolve,
    results_dir_of,
    runs_dir,
)
from retrofit.typed import typed
from retrofit.variants import HPARAMS, available_variants, load_variant, typed_spec

log = logging.getLogger(__name__)


def host_path(cfg: DictConfig, base_dir: Path) -> Path:
    """The host's checkpoint file: `host.path` when given (validated offline: exists, is a TabPFN
    checkpoint of a supported architecture), else the shipped host `host.name`."""
    if OmegaConf.is_missing(cfg.host, "path"):  # checked first: a merge onto the schema would hide it
        raise RunnerError("host=checkpoint needs host.path=<file of a TabPFN checkpoint>")
    host = typed(HostConfig, cfg.host, "host", RunnerError)
    if not re.fullmatch(LABEL, host.name):
        raise RunnerError(
            f"host.name={host.name!r} labels results and names unit directories: use letters, digits, _ . - "
            "(e.g. host.name=my_v3)"
        )
    if host.path is None:
        return get_path(host.name)
    return check_checkpoint(resolve(base_dir, host.path))


def run_settings(cfg: DictConfig, base_dir: Path) -> dict[str, Any]:
    """The `Case` fields every case of a typed `RunConfig` node shares (the host, its checked file,
    the start directory, the regressor, device and split settings, `overwrite`, the timing
    regressor's members; `Case` checks their ranges). `device=cuda` without CUDA fails here, as do a
    `cache_dir` or `results_dir` that is null, a file or not writable, a `cache_dir` inside the
    committed `results/`, and a `host.name` that is not a plain label."""
    outside_record(output_dir(cfg, base_dir, "cache_dir"), "cache_dir")
    output_dir(cfg, base_dir, "results_dir")
    try:
        device = resolve_device(cfg.device)
    except RetrofitError as err:
        raise RunnerError(str(err)) from None
    return dict(
        host=str(cfg.host.name),
        host_path=host_path(cfg, base_dir),
        base_dir=Path(base_dir),
        n_estimators=cfg.n_estimators,
        test_size=cfg.test_size,
        overwrite=cfg.overwrite,
        device=device,
        precision=cfg.precision,
        threads=cfg.threads,
        timing_members=_timing(cfg).members,
    )


def _timing(cfg: DictConfig) -> TimingConfig:
    return typed(TimingConfig, cfg.timing, "timing", RunnerError)


def timing_rounds(cfg: DictConfig, seed: int) -> int:
    """Timing rounds of the case with `seed` (`TimingConfig`; 0: not timed)."""
    timing = _timing(cfg)
    return timing.rounds if timing.seeds is None or seed in timing.seeds else 0


def dataset_spec(node: DictConfig) -> DatasetSpec:
    """The validated `DatasetSpec` of a dataset config node."""
    return DatasetSpec.from_mapping(OmegaConf.to_container(node, resolve=True))


def dataset_specs(hydra_cfg: DictConfig, names: Iterable[str]) -> list[DatasetSpec]:
    """The validated `DatasetSpec` of each `dataset` option in `names` (`group_option`)."""
    return [dataset_spec(group_option(hydra_cfg, "dataset", name)) for name in names]


def _without_nulls(value: Any) -> Any:
    """`value` without its None entries when it is a dict (a tau rule written with only its own key)."""
    return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value


def unit_spec(option: str, node: DictConfig | dict, hparams: dict[str, Any]) -> UnitSpec:
    """The unit running the variant config `node` of the `variant` option `option` (see module docstring).

    Raises RunnerError naming a refused key, a name that is not a label (`retrofit.labels`: names
    never become paths otherwise) or disagrees with the option, or a bad value.
    """
    check_label("variant name", option, RunnerError)
    try:
        spec = typed_spec(node)
    except RetrofitError as err:
        raise RunnerError(f"variant={option}: {err}") from None
    if spec["name"] not in (None, option):
        raise RunnerError(f"variant={option} has name {spec['name']!r}; a variant's file and its `name` must agree")
    spec["name"] = option
    if option in available_variants():
        builtin = typed_spec(load_variant(option))
        changed = sorted(key for key in spec if spec[key] != builtin[key])
        refused = [key for key in changed if key not in HPARAMS]
        if refused:
            raise RunnerError(
                f"variant.{refused[0]}={spec[refused[0]]!r} would change what the built-in variant {option!r} is; "
                f"only {', '.join(HPARAMS)} may be overridden: copy it into a new variant file with its own name"
            )
        unit = UnitSpec(option, {**{key: _without_nulls(spec[key]) for key in changed}, **hparams})
    else:
        unit = UnitSpec(option, dict(hparams), spec)
    try:
        unit.resolved()
    except RetrofitError as err:
        raise RunnerError(f"variant={option} with hparams {unit.hparams}: {err}") from None
    return unit


def applicable(units: tuple[UnitSpec, ...], host_path: Path, host: str) -> tuple[UnitSpec, ...]:
    """`units` less the closed variants `host`'s architecture cannot close (logged, not run)."""
    arch = ARCHITECTURES[architecture_name(host_path)]
    skipped = [u.variant for u in units if arch.refusal(u.resolved())]
    if skipped:
        log.info("host %s (%s): closed variants %s not run: %s", host, arch.name, skipped, arch.closed_refusal)
    return tuple(u for u in units if u.variant not in skipped)


def variant_units(cfg: DictConfig, hydra_cfg: DictConfig, hparams: dict[str, Any]) -> tuple[UnitSpec, ...]:
    """The units of a case: one per variant node it runs (`retrofit.runner.compose.variant_nodes`:
    baseline first), each with `hparams`."""
    return tuple(unit_spec(name, node, hparams) for name, node in variant_nodes(cfg, hydra_cfg).items())


def case_from_hydra(cfg: DictConfig, hydra_cfg: DictConfig) -> Case:
    """The `Case` a composed `configs/config.yaml` describes, with the variant options, search path and
    start directory read off `hydra_cfg` (`HydraConfig.get()` in a job, `cfg.hydra` from compose).
    Raises RunnerError / DatasetError for bad values."""
    base_dir = Path(hydra_cfg.runtime.cwd)
    cfg = job_config(cfg, SweepConfig, "configs/config.yaml")
    hparams = OmegaConf.to_container(cfg.hparams, resolve=True)
    settings = run_settings(cfg, base_dir)
    results_dir_of(cfg, hydra_cfg)
    units = with_arms(variant_units(cfg, hydra_cfg, hparams), cfg.decomposition, cfg.seed)
    return Case(
        dataset=dataset_spec(cfg.dataset),
        seed=cfg.seed,
        units=applicable(units, settings["host_path"], settings["host"]),
        runs_dir=runs_dir(cfg, base_dir),
        timing_rounds=timing_rounds(cfg, cfg.seed),
        **settings,
    )
