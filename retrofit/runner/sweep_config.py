"""From a composed Hydra config (`configs/sweep.yaml`, `configs/tau_sweep.yaml`) to `Case`s, with
Hydra's own composition; the decomposition arms as extra units of a case; a whole sweep checked
before its first job and finished after its last, with the cases it checked.

Jobs: a config group option's node on a job's search path (`group_option`), the variant nodes a
case runs (the jobs of a sweep, as its sweeper expands them: `retrofit.runner.sweep_jobs`).

Variants: no `variant` choice runs every variant on Hydra's search path; `variant=<name>` runs
`baseline` and that one, `variant=[a,b]` baseline and those (one fit); `-m variant=a,b` one job
per variant, sharing the case's baseline unit. The composed node runs, so `variant.<key>=<value>`
takes effect: a key of `retrofit.variants.HPARAMS` on a built-in variant becomes a hyper-parameter
override (part of the unit's key); any other key of a built-in variant is refused, since it would
change what the name means. A closed variant on a host whose architecture cannot close the whole
model is left out of that host's cases, and the log says so. Relative paths are resolved against
the directory the command started in (`hydra.runtime.cwd`).

Decomposition: a retrofitted OAttention departs from the stock host in two ways: presences
p = ||h||² / (tau + ||h||²) below 1 (tau = c · median ||h||² of the context carriers), and the sink
eps_den. With the paper's `absolute` sink, query i gives the sink the share eps_den / (eps_den + W_i),
which takes the mass where a trained host puts every logit of a query far below log eps_den; the
`relative` sink sits at log eps_den + log W_i, a constant share eps_den / (1 + eps_den) whatever
the logits. The arms of `retrofit/configs/decomposition/sink_presence.yaml` run each listed variant with
overrides that switch the two effects on or off (c as in the variant, or so small that every
non-null presence rounds to 1; absolute or relative sink). They are extra units of every case whose
seed is in the config's `seeds` (null: every case), on the case's one fit, so every arm is matched
against the same baseline prediction. `with_arms` labels the units of a case: a unit that realises
arm A of variant V carries `arm=A` (the variant's own unit for an arm with no overrides; an extra,
untimed unit with `arm_extra=True` otherwise). The labels travel in each unit's record
(`retrofit.results.record`), so the aggregation tells arm rows apart by what the rows say, never
by re-reading this config.

A sweep (the Hydra callback `experiments.sweep.CheckSweep`): before the first job, every job
composed as Hydra's configured sweeper expands them (`sweep_job_configs`: the configs that the
write check of `retrofit.jobs.preflight` composed for the same sweep), their cases built and
checked together (`retrofit.runner.case.check_cases`: each job's data loads and splits; no unit
that two jobs would run differently) and its seed lists, each notice said once, the reference
read (`checked_sweep`). After the last job, the sweep's results from the units of those same cases,
under the identities they computed, with the rows already there (`finish_sweep`,
`retrofit.runner.finish.finish`) and, with `reference=<csv>`, checked against that file as read
before the sweep began.
"""

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from retrofit.adapters import ARCHITECTURES
from retrofit.data import DatasetSpec
from retrofit.data.csv_file import path_on_command_line
from retrofit.data.spec import LABEL
from retrofit.errors import RetrofitError, RunnerError
from retrofit.hosts import check_checkpoint, get_path
from retrofit.hosts.locate import CLI_ARGUMENT, checkpoint_argument
from retrofit.hosts.regressor import resolve_device
from retrofit.hosts.validation import architecture_name
from retrofit.labels import check_label
from retrofit.record_guard import in_record, outside_record, writable_dir
from retrofit.results.reproduction import Reference, require_covered
from retrofit.runner import (
    BUILTIN_SEARCHPATH,
    DecompositionConfig,
    HostConfig,
    SweepConfig,
    TimingConfig,
    collected_notices,
    command_overrides,
    job_config,
    job_logs,
    output_dir,
    reference_of,
    resolve,
    results_dir_of,
    runs_dir,
    say,
)
from retrofit.runner.case import BASELINE, Case, UnitSpec, check_cases, resolved_variant
from retrofit.runner.finish import finish, sweep_records
from retrofit.runner.sweep_jobs import sweep_job_configs
from retrofit.typed import typed
from retrofit.unit_key import hparams_text
from retrofit.variants import HPARAMS, VARIANT_DIR, available_variants, load_variant, typed_spec, with_tau_rule

log = logging.getLogger(__name__)


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
    """The `variant` options on this job's search path. RunnerError if the built-in ones are missing,
    or if a variant file of the checkout or of a search-path folder has a built-in variant's name:
    whichever comes first on the search path (the checkout's `configs/` before every entry) would
    hide the other, and its results would read as the other's."""
    options = _group_options(_primary(), _searchpath(hydra_cfg), "variant")
    if BASELINE not in options:
        raise RunnerError(
            f"the built-in variants are not on Hydra's search path; keep {BUILTIN_SEARCHPATH} in it, e.g. "
            f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file:///path/to/your/configs]"
        )
    folders = [Path(src.path) / "variant" for src in hydra_cfg.runtime.config_sources if src.schema == "file"]
    own = [folder for folder in folders if folder.resolve() != VARIANT_DIR.resolve()]
    files = (folder / f"{name}.yaml" for folder in own for name in available_variants())
    named = next((file for file in files if file.is_file()), None)
    if named is not None:
        raise RunnerError(
            f"variant file {named} has the name of the built-in variant {named.stem!r}, so one would hide "
            f"the other; rename the file (e.g. {named.stem}_mine.yaml, with its `name` key)"
        )
    return sorted(options)


def listed_variants(hydra_cfg: DictConfig) -> list[str] | None:
    """The variants of a `variant=[a,b]` override (one run, one baseline, every listed variant), or
    None. `variant.<key>=` overrides name one variant; with a list, `+hparams.<key>=` sets all."""
    overrides = OverridesParser.create().parse_overrides(command_overrides(hydra_cfg))
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
        repeated = sorted({name for name in listed if listed.count(name) > 1})
        if repeated:
            raise RunnerError(f"variant=[...] lists {', '.join(repeated)} more than once; list each variant once")
        nodes |= {name: group_option(hydra_cfg, "variant", name) for name in listed if name != BASELINE}
    elif choice is None:
        nodes |= {name: group_option(hydra_cfg, "variant", name) for name in options if name != BASELINE}
    else:
        nodes[choice] = cfg.variant
    return nodes


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
    with checkpoint_argument(CLI_ARGUMENT):  # a refusal names host.path=, where the checkpoint came from
        return get_path(host.name) if host.path is None else check_checkpoint(host.path, base_dir=base_dir)


def run_settings(cfg: DictConfig, base_dir: Path) -> dict[str, Any]:
    """The `Case` fields every case of a typed `RunConfig` node shares (the host, its checked file,
    the start directory, the regressor, device and split settings, `overwrite`, the timing
    regressor's members; `Case` checks their ranges). `device=cuda` without CUDA fails here, as do a
    `cache_dir` (or its unit store `runs/`) or `results_dir` that is null, a file or not writable, a
    `cache_dir` (or its `runs/`, a link say) inside the committed `results/`, and a `host.name` that
    is not a plain label."""
    outside_record(output_dir(cfg, base_dir, "cache_dir"), "cache_dir")
    outside_record(writable_dir(runs_dir(cfg, base_dir), "cache_dir"), "cache_dir")  # the unit store, cache_dir/runs
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


def dataset_spec(node: DictConfig, yaml_file: Path | None = None) -> DatasetSpec:
    """The validated `DatasetSpec` of a dataset config node read from `yaml_file` (`dataset_file`):
    its stem must be the dataset's name, and a relative CSV `path` is read from its folder."""
    return DatasetSpec.from_mapping(OmegaConf.to_container(node, resolve=True), yaml_file)


def dataset_file(hydra_cfg: DictConfig, option: str) -> Path | None:
    """The file `dataset/<option>.yaml` as Hydra finds it: in the first file source of the job's
    search path that holds one (`hydra.runtime.config_sources`); None for a dataset whose `path` is
    set on the command line (`dataset.path=`: read from the directory the command started in)."""
    if path_on_command_line(command_overrides(hydra_cfg)):
        return None
    sources = [Path(src.path) for src in hydra_cfg.runtime.config_sources if src.schema == "file"]
    return next((file for file in (src / "dataset" / f"{option}.yaml" for src in sources) if file.is_file()), None)


def dataset_specs(hydra_cfg: DictConfig, names: Iterable[str]) -> list[DatasetSpec]:
    """The validated `DatasetSpec` of each `dataset` option in `names` (`group_option`)."""
    return [dataset_spec(group_option(hydra_cfg, "dataset", name), dataset_file(hydra_cfg, name)) for name in names]


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
        twice = [key for key in changed if key in hparams]
        if twice:
            raise RunnerError(
                f"{twice[0]} is set twice, by variant.{twice[0]} and by +hparams.{twice[0]}; keep one of them"
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
    """The units of a case: one per variant node it runs (`variant_nodes`: baseline first), each
    with `hparams`."""
    return tuple(unit_spec(name, node, hparams) for name, node in variant_nodes(cfg, hydra_cfg).items())


def case_from_hydra(cfg: DictConfig, hydra_cfg: DictConfig) -> Case:
    """The `Case` a composed `configs/sweep.yaml` describes, with the variant options, search path and
    start directory read off `hydra_cfg` (`HydraConfig.get()` in a job, `cfg.hydra` from compose).
    Raises RunnerError / DatasetError for bad values."""
    base_dir = Path(hydra_cfg.runtime.cwd)
    cfg = job_config(cfg, SweepConfig, "configs/sweep.yaml")
    hparams = with_tau_rule(OmegaConf.to_container(cfg.hparams, resolve=True))
    settings = run_settings(cfg, base_dir)
    results_dir_of(cfg, hydra_cfg)
    units = with_arms(variant_units(cfg, hydra_cfg, hparams), cfg.decomposition, cfg.seed)
    return Case(
        dataset=dataset_spec(cfg.dataset, dataset_file(hydra_cfg, hydra_cfg.runtime.choices.get("dataset"))),
        seed=cfg.seed,
        units=applicable(units, settings["host_path"], settings["host"]),
        runs_dir=runs_dir(cfg, base_dir),
        timing_rounds=timing_rounds(cfg, cfg.seed),
        **settings,
    )


# --- the decomposition arms --------------------------------------------------------------------

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
            resolved = resolved_variant(variant, self.arms[arm])
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


# --- a whole sweep: checked before its first job, finished after its last -----------------------


def sweep_cases(config: DictConfig) -> list[tuple[DictConfig, Case]]:
    """Every job of the sweep composed (with its `hydra` node) and its `Case` built (validating it)."""
    return [(job, case_from_hydra(job, job.hydra)) for job in sweep_job_configs(config)]


def check_seed_selections(jobs: list[tuple[DictConfig, Case]]) -> None:
    """RunnerError when `timing.seeds` or `decomposition.seeds` selects no job of this sweep (no
    job's seed is in its list): the key would time no case or run no arm, and so take no effect."""
    for key, chosen in (("timing.seeds", _timing_seeds), ("decomposition.seeds", _arm_seeds)):
        lists = [(case.seed, chosen(job)) for job, case in jobs]
        if all(seeds is not None and seed not in seeds for seed, seeds in lists):
            ran = sorted({seed for seed, _ in lists})
            raise RunnerError(
                f"{key}={list(lists[0][1])} selects no case of this sweep (its seeds: {ran}); "
                "list some of those seeds, or null for every case"
            )


def _timing_seeds(job: DictConfig) -> list[int] | None:
    return job.timing.seeds if job.timing.rounds else None


def _arm_seeds(job: DictConfig) -> list[int] | None:
    return None if job.get("decomposition") is None else job.decomposition.get("seeds")


def checked_sweep(config: DictConfig) -> tuple[list[Case], Reference | None]:
    """The cases of the multirun `config`, checked together (module docstring), and its reference
    (covered by the cases when a record run requires every row)."""
    with collected_notices() as notices:
        jobs = sweep_cases(config)
        cases = [case for _, case in jobs]
        check_cases(cases)
        check_seed_selections(jobs)
    reference = reference_of(config, Path(config.hydra.runtime.cwd))
    require_covered(reference, (case.key(unit) for case in cases for unit in case.units))
    for notice in notices:
        say(f"note: {notice}")
    return cases, reference


def finish_sweep(config: DictConfig, cases: list[Case], reference: Reference | None, reused: str) -> None:
    """The sweep's results from the stored units of `cases`, the cases `checked_sweep` built before
    the first job, under the identities they computed then (`retrofit.runner.finish.sweep_records`:
    nothing is built again), with the rows already in its results_dir kept (two sweeps into one
    folder keep each other's rows), except in the committed record, which holds exactly the rows of
    the sweep that makes it."""
    sweep_dir = resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir)
    logs = job_logs(sweep_dir, config.hydra.job.name)
    results_dir = results_dir_of(config, config.hydra)
    record = in_record(results_dir)  # the record holds exactly its sweep's rows; elsewhere runs accumulate
    paths = {case.host: case.host_path for case in cases}
    finish(results_dir, sweep_records(cases), logs, reused, keep=not record, reference=reference, host_paths=paths)
