"""Hydra composition that imports Hydra alone: the jobs of a sweep (`sweep_jobs`, `sweep_job_configs`),
a config group option's node on a job's search path (`group_option`) and the variant nodes a case
runs (`variant_nodes`). The sweep builds its cases from these (`retrofit.runner.config`) and the
aggregation names a job's units by them (`retrofit.runner.collect`), without importing the models.
"""

import functools

import yaml
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.types import RunMode
from hydra.utils import get_class
from omegaconf import DictConfig

from retrofit.errors import RunnerError
from retrofit.runner.units import BASELINE

BUILTIN_SEARCHPATH = "pkg://retrofit.configs"
"""The search path entry under which Hydra finds the built-in variants."""


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job the sweeper will launch for this multirun `config`:
    `hydra.sweeper.params`, then the command line, expanded by the configured sweeper itself
    (Hydra's basic sweeper, named by its config string `hydra.sweeper._target_`)."""
    sweeper = get_class(config.hydra.sweeper._target_)
    if not hasattr(sweeper, "split_arguments"):
        raise RunnerError(f"hydra.sweeper={config.hydra.sweeper._target_}: the sweep runs with Hydra's basic sweeper")
    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    overrides = OverridesParser.create().parse_overrides([*params, *config.hydra.overrides.task])
    try:
        (jobs,) = sweeper.split_arguments(overrides, None)
    except HydraException as err:
        raise RunnerError(f"{err}: sweep lists of values (a,b,c or choice(a,b,c))") from None
    return jobs


def sweep_job_configs(config: DictConfig) -> list[DictConfig]:
    """The composed config (with its `hydra` node) of every job of the multirun `config` (`sweep_jobs`)."""
    loader = GlobalHydra.instance().config_loader()
    return [loader.load_sweep_config(config, job) for job in sweep_jobs(config)]


def group_option(hydra_cfg: DictConfig, group: str, option: str) -> DictConfig:
    """The node `group=option` composes to on this job's search path (read-only), on its own: the
    root config's schema does not see it, so any root config may read any group's options. Only the
    search path is taken from the job: its other Hydra overrides (launcher, directories, callbacks)
    say how the command runs, not what a group's option holds. RunnerError naming the option when
    its file is not plain YAML (e.g. a `!!python/object` tag, which is never constructed)."""
    try:
        return _composed(_primary(), None, (_searchpath(hydra_cfg), f"+{group}={option}"))[group]
    except yaml.YAMLError as err:
        where = (
            f" ({err.problem_mark.name}, line {err.problem_mark.line + 1})"
            if getattr(err, "problem_mark", None)
            else ""
        )
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise RunnerError(f"{group}={option}{where} is not plain YAML: {problem}; remove the tag") from None


def _primary() -> tuple[str, ...]:
    """The primary search path of the running Hydra app (its config directory and Hydra's own)."""
    return tuple(str(element.path) for element in GlobalHydra.instance().config_loader().get_search_path().get_path())


def _searchpath(hydra_cfg: DictConfig) -> str:
    """The override that sets this job's search path (`hydra.searchpath`), and nothing else of it."""
    return "hydra.searchpath=[" + ",".join(f"'{path}'" for path in hydra_cfg.searchpath) + "]"


@functools.lru_cache(maxsize=256)
def _composed(primary: tuple[str, ...], config_name: str | None, overrides: tuple[str, ...]) -> DictConfig:
    """The config `config_name` (None: none) with `overrides`, composed once per search path
    (`primary`) and overrides."""
    return GlobalHydra.instance().config_loader().load_configuration(config_name, list(overrides), RunMode.RUN)


@functools.lru_cache(maxsize=64)
def _group_options(primary: tuple[str, ...], searchpath: str, group: str) -> tuple[str, ...]:
    """The options of `group` on the search path the override `searchpath` sets, listed once per
    primary search path and search path (a sweep asks for every job)."""
    return tuple(GlobalHydra.instance().config_loader().get_group_options(group, overrides=[searchpath]))


def variant_options(hydra_cfg: DictConfig) -> list[str]:
    """The `variant` options on this job's search path; RunnerError if the built-in ones are missing."""
    options = _group_options(_primary(), _searchpath(hydra_cfg), "variant")
    if BASELINE not in options:
        raise RunnerError(
            f"the built-in variants are not on Hydra's search path; keep {BUILTIN_SEARCHPATH} in it, e.g. "
            f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file:///path/to/your/configs]"
        )
    return sorted(options)


def listed_variants(hydra_cfg: DictConfig) -> list[str] | None:
    """The variants of a `variant=[a,b]` override (one run, one baseline, every listed variant), or
    None. `variant.<key>=` overrides name one variant; with a list, `+hparams.<key>=` sets all."""
    overrides = OverridesParser.create().parse_overrides(list(hydra_cfg.overrides.task))
    listed = [o.value() for o in overrides if o.get_key_element() == "variant" and isinstance(o.value(), list)]
    if not listed:
        return None
    keyed = [o.input_line for o in overrides if o.get_key_element().startswith("variant.")]
    if keyed:
        raise RunnerError(f"{keyed[0]} applies to one variant; with variant=[...] use +hparams.<key>=<value> for all")
    return [str(name) for name in listed[-1]]


def variant_nodes(cfg: DictConfig, hydra_cfg: DictConfig) -> dict[str, DictConfig]:
    """The variant nodes a case runs, by option name: baseline first, then every variant option (no
    `variant` choice), the listed ones (`variant=[a,b]`) or the chosen one (`cfg.variant`, as
    composed with its overrides)."""
    options = variant_options(hydra_cfg)
    choice = hydra_cfg.runtime.choices.get("variant")
    listed = listed_variants(hydra_cfg)
    nodes = {BASELINE: group_option(hydra_cfg, "variant", BASELINE)}
    if listed is not None:
        unknown = [name for name in listed if name not in options]
        if unknown:
            raise RunnerError(f"variant={unknown[0]} is not a variant option; choose from {', '.join(options)}")
        nodes |= {name: group_option(hydra_cfg, "variant", name) for name in listed if name != BASELINE}
    elif choice is None:
        nodes |= {name: group_option(hydra_cfg, "variant", name) for name in options if name != BASELINE}
    else:
        nodes[choice] = cfg.variant
    return nodes
