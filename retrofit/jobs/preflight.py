"""What a command would write and what it would run, checked before Hydra acts, and the refusals that follow.

Hydra acts before a job's own checks run: it configures its logging and instantiates the callbacks,
sweeper and launcher its config names, then writes the run folder with its `.hydra/` (or the sweep
folder with `multirun.yaml`) and the log files its logging config names. `retrofit.jobs.launch`
therefore checks first: the command line (`check_command_line`: an override of `hydra.callbacks`,
which would take the check away; `--config-dir` holding a config its own folders would hide, which
would silently not be read), then the config it composes, as Hydra will (`retrofit.jobs.compose`),
before Hydra sees it (`check_composed`): code it names that the project does not list
(`retrofit.jobs.instantiated`), a config without the callback `CheckWrites` (`require_checked`: a
root config of one's own that leaves out `- hydra: default`, or replaces the check), job settings
the jobs do not run under (`check_job_settings`: `hydra.job.chdir=true`, the record variable in
`hydra.job.env_set`), and `check_config`: every path Hydra would write (`hydra_writes`: the run
folder, or the sweep folder and its launcher's folders; `.hydra/`, every logging handler's
`filename`) refused, in one line, in the committed record (`retrofit.record_guard`) unless this is
a record target's command, and a config group option given as a path (`../x`, `/x`: a file
outside the config folders). A multirun's jobs are counted and said there, before any is composed
(`retrofit.runner.sweep_jobs`). The callback `CheckWrites` (every root config has it through
`configs/hydra/default.yaml`) runs the same checks (`check_command`) again on the config Hydra
composed itself, so a config file changed since the entry point read it is held to them too, and,
in a multirun, `check_job` on every job's config before the first job runs: the code it names (a
job's override may choose a config option of its own), each job's own folder, `.hydra/` and log
files and its job settings.
"""

import copy
import itertools
import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from retrofit.errors import RunnerError
from retrofit.jobs import CONFIGS_DIR
from retrofit.jobs.exits import callback_errors
from retrofit.jobs.instantiated import CHECK_WRITES, LAUNCHERS, check_instantiated
from retrofit.record_guard import RECORD_DIR, RECORD_ENV, in_record, recording
from retrofit.runner import BUILTIN_SEARCHPATH, command_overrides, say
from retrofit.runner.sweep_jobs import sweep_job_configs, sweep_jobs

BUILTIN_CONFIGS = Path(__file__).resolve().parents[1] / "configs"
"""The package's own config folder (`pkg://retrofit.configs`: the built-in variants)."""


class CheckWrites(Callback):
    """Refuse, before Hydra writes anything, a command that would write into the committed record
    or read a config group option from a path (the module docstring), checking Hydra's own
    composition of the command and, in a multirun, every job's config (`check_job`)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        with callback_errors():
            check_command(config, RunMode.RUN)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with callback_errors():
            check_command(config, RunMode.MULTIRUN)
            for num, job in enumerate(sweep_job_configs(config)):
                check_job(job, num)


def check_composed(cfg: DictConfig, mode: RunMode) -> dict[str, Path]:
    """What Hydra will write for the command's config `cfg` as `retrofit.jobs.compose` composed it
    (`hydra_writes`, its run or sweep folder first), checked before Hydra acts on it
    (`check_command`). A multirun's jobs are then counted (more than `retrofit.bounds.MAX_JOBS`,
    or one job twice, is refused) and their number printed."""
    writes = check_command(cfg, mode)
    if mode == RunMode.MULTIRUN:  # its jobs counted, bounded and said before Hydra composes each
        count = len(sweep_jobs(cfg))
        say(f"{count} job{'s' * (count != 1)}: each is composed and checked before the first runs")
    return writes


def check_command(cfg: DictConfig, mode: RunMode) -> dict[str, Path]:
    """What Hydra writes for the command's composed config `cfg` run in `mode` (`hydra_writes`),
    checked as every composition of a command is, the entry point's and Hydra's own: code it names
    (`check_instantiated`), the callback `CheckWrites` (`require_checked`), its job settings
    (`check_job_settings`) and its writes (`check_config`); RunnerError for the first that fails."""
    check_instantiated(cfg)
    require_checked(cfg.hydra)
    check_job_settings(cfg.hydra)
    return check_config(cfg, mode)


def check_config(cfg: DictConfig, mode: RunMode, num: int | None = None) -> dict[str, Path]:
    """What Hydra writes for the composed command config `cfg` (with its `hydra` node) run in `mode`
    (or as job number `num` of a multirun), `hydra_writes`, checked; RunnerError for a config group
    option given as a path, or a file Hydra would write in the committed record."""
    check_group_options(cfg, [*command_overrides(cfg.hydra), *command_overrides(cfg.hydra, "hydra")])
    writes = hydra_writes(copy.deepcopy(cfg), mode, num)
    check_hydra_writes(writes)
    return writes


JOB_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")
"""The variables a config may set in a job's environment (`hydra.job.env_set`): thread counts and
the GPUs a job sees. Any other moves what the job writes or runs: HOME or SKB_DATA_DIRECTORY the
folders tabpfn's imports create (into the committed record, say), PATH, LD_PRELOAD or PYTHONPATH the
code that its subprocesses (git, a launcher's workers) load."""


def check_job_settings(hydra_cfg: DictConfig) -> None:
    """RunnerError for a Hydra job setting the jobs do not run under: `hydra.job.chdir=true` (a job
    reads its relative paths from the directory the command starts in) and a variable of
    `hydra.job.env_set` that is not one of `JOB_ENV`, the record variable first (set by a record
    target for its own command only, never by a config)."""
    if hydra_cfg.job.chdir:
        raise RunnerError(
            "hydra.job.chdir=true: a job runs in the directory the command starts in, where its relative "
            "paths (results_dir, cache_dir, a dataset's file) are read; drop it (Hydra's own files go to "
            "hydra.run.dir)"
        )
    env_set = list(hydra_cfg.job.env_set or {})
    if RECORD_ENV in env_set:
        raise RunnerError(
            f"hydra.job.env_set.{RECORD_ENV}: the record variable is set by the Makefile's record targets, "
            "for their own command only; drop it"
        )
    unlisted = [name for name in env_set if name not in JOB_ENV]
    if unlisted:
        raise RunnerError(
            f"hydra.job.env_set.{unlisted[0]}: a config sets only {', '.join(JOB_ENV)} in a job's environment "
            "(another variable, such as HOME, PATH or PYTHONPATH, moves what the job writes or runs); "
            f"set {unlisted[0]} in the shell that runs the command"
        )


def check_job(job: DictConfig, num: int) -> None:
    """RunnerError, naming job number `num` and its overrides, for the config `job` of a multirun's
    job (`retrofit.runner.sweep_jobs.sweep_job_configs`): code it names (its job logging is its
    own), its job settings and what it writes, its own folder included (`check_config`)."""
    try:
        check_instantiated(job)
        check_job_settings(job.hydra)
        check_config(job, RunMode.MULTIRUN, num)
    except RunnerError as err:
        raise RunnerError(f"job {num} ({' '.join(command_overrides(job.hydra))}): {err}") from None


CALLBACKS_OVERRIDE = re.compile(r"^[~+]*hydra[./]callbacks\b")
SWEEPER_PARAMS_OVERRIDE = re.compile(r"^[~+]*hydra\.sweeper\.params\b")
"""An override of the basic sweeper's `params`, which OmegaConf cannot merge into its unset mapping
(Hydra ends in an AssertionError or AttributeError traceback, whatever the form)."""


def check_command_line(argv: list[str], configs_dir: Path) -> None:
    """RunnerError for a command line (`argv`, after the program) that overrides
    `hydra.sweeper.params` (`SWEEPER_PARAMS_OVERRIDE`) or would take `CheckWrites` away: an
    override of `hydra.callbacks`, or a `-cd`/`--config-dir` folder holding a config that
    the command's own config folders hide (Hydra reads those first, so it would not be read); and for
    a config group option given as a path, refused before Hydra composes (whether or not the file
    exists; `check_group_options` checks the composed choices too)."""
    changed = next((arg for arg in argv if CALLBACKS_OVERRIDE.match(arg)), None)
    if changed is not None:
        raise RunnerError(
            f"{changed}: hydra.callbacks are not changed from the command line (they check what a run "
            "writes before it writes); drop the override"
        )
    params = next((arg for arg in argv if SWEEPER_PARAMS_OVERRIDE.match(arg)), None)
    if params is not None:
        raise RunnerError(
            f"{params}: hydra.sweeper.params cannot be set from the command line (Hydra fails on it); "
            "sweep the keys themselves: -m key=a,b"
        )
    groups = {folder.name for root in (configs_dir, BUILTIN_CONFIGS) for folder in root.iterdir() if folder.is_dir()}
    _refuse_paths(
        (override.input_line, override.key_or_group, _option_values(override))
        for override in map(_parsed, argv)
        if override is not None
        and not override.is_delete()
        and (override.key_or_group in groups or override.key_or_group.startswith("hydra/"))
    )
    for flag, value in itertools.pairwise(argv):
        if flag in ("-cd", "--config-dir"):
            check_config_dir(Path(value), (configs_dir, BUILTIN_CONFIGS))
    for arg in argv:
        if arg.startswith("--config-dir="):
            check_config_dir(Path(arg.split("=", 1)[1]), (configs_dir, BUILTIN_CONFIGS))


def require_checked(hydra_cfg: DictConfig) -> None:
    """RunnerError unless the running config has `CheckWrites` among its callbacks (a root config of
    one's own that leaves out `- hydra: default` would run unchecked)."""
    targets = [OmegaConf.select(node, "_target_") for node in (hydra_cfg.get("callbacks") or {}).values()]
    if CHECK_WRITES not in targets:
        raise RunnerError(
            f"config {hydra_cfg.job.config_name!r} runs without the callback {CHECK_WRITES} that checks what "
            "a run writes; list `- hydra: default` in its defaults (as configs/sweep.yaml does)"
        )


def check_config_dir(config_dir: Path, own: tuple[Path, ...]) -> None:
    """RunnerError naming the first YAML file under `config_dir` that a file of the same place in
    one of the `own` config folders hides (Hydra reads those first)."""
    if not config_dir.is_dir():
        return  # Hydra names a missing folder itself
    for path in sorted(config_dir.rglob("*.yaml")):
        relative = path.relative_to(config_dir)
        hiding = next((folder / relative for folder in own if (folder / relative).is_file()), None)
        if hiding is not None and not hiding.samefile(path):
            raise RunnerError(
                f"--config-dir {config_dir}: its {relative} would not be read, {hiding} comes first; "
                f"rename it (e.g. mine.yaml) and select it (-cn mine, or {relative.parent.as_posix()}=mine)"
            )


def hydra_writes(cfg: DictConfig, mode: RunMode, num: int | None = None) -> dict[str, Path]:
    """Every path Hydra writes for the composed `cfg` before a job runs, by the key that names it,
    resolved as Hydra resolves them, absolute. A run (`mode` RUN) writes its run folder, its
    `hydra.output_subdir` and the `filename` of every handler of its job and Hydra logging; a
    multirun (`num` None) its sweep folder, the files of Hydra's logging and the folders its
    launcher writes (`retrofit.jobs.instantiated.LAUNCHERS`, up to a `%` placeholder such as
    submitit's `%j`); job number `num` of a multirun (`cfg` is that job's config) the sweep folder,
    the job's own folder (`hydra.sweep.subdir` under it), its `hydra.output_subdir` and the files of
    its job logging. `cfg` gets the job number and output folder Hydra gives it: pass a copy."""
    hydra = cfg.hydra
    job = mode == RunMode.RUN or num is not None
    with read_write(hydra), open_dict(hydra):
        hydra.job.num = num or 0
        hydra.job.id = hydra.job.get("id") or str(num or 0)
        if mode == RunMode.RUN:
            writes = {"hydra.run.dir": hydra.run.dir}
        else:
            writes = {"hydra.sweep.dir": hydra.sweep.dir}
            if job:
                writes["hydra.sweep.subdir"] = Path(hydra.sweep.dir) / hydra.sweep.subdir
        empty = next((key for key, path in writes.items() if str(path) in ("", ".")), None)
        if empty is not None:
            raise RunnerError(f"{empty} is empty; leave it at its default (under outputs/) or name a folder")
        output = str(list(writes.values())[-1])
        hydra.runtime.output_dir = str(Path(output).absolute())
        before = HydraConfig.instance().cfg
        HydraConfig.instance().set_config(cfg)  # for ${hydra:...} in a file name (run_job sets it again)
        try:
            if job and hydra.output_subdir is not None:
                writes["hydra.output_subdir"] = Path(output) / hydra.output_subdir
            for logging in [name for name, used in (("job_logging", job), ("hydra_logging", num is None)) if used]:
                handlers = OmegaConf.select(hydra, f"{logging}.handlers") or {}
                for name, handler in handlers.items():
                    if "filename" in handler:
                        writes[f"hydra.{logging}.handlers.{name}.filename"] = handler.filename
            if not job:
                writes |= _launcher_folders(hydra.launcher)
        finally:
            HydraConfig.instance().cfg = before
    return {key: Path(str(path)).absolute() for key, path in writes.items()}


def _launcher_folders(launcher: DictConfig) -> dict[str, str]:
    """The folders the multirun `launcher` writes (`LAUNCHERS`), by key, each up to its first `%`."""
    keys = LAUNCHERS.get(launcher.get("_target_"), ())
    return {f"hydra.launcher.{key}": str(launcher[key]).split("%")[0] for key in keys if launcher.get(key)}


def check_hydra_writes(writes: dict[str, Path]) -> None:
    """RunnerError naming the first of `writes` (key -> path) in the committed record, unless this
    is a record target's command (`retrofit.record_guard.recording`)."""
    inside = [(key, path) for key, path in writes.items() if in_record(path)]
    if inside and not recording():
        key, path = inside[0]
        raise RunnerError(
            f"{key} puts Hydra's files at {path}, in the committed record {RECORD_DIR}, written only by its make "
            f"target ({RECORD_ENV}=1); leave {key} at its default (under outputs/) or name a folder elsewhere"
        )


def _option_values(override: Override) -> list[str]:
    """The option names an override of a config group selects (every one of a sweep's)."""
    if override.is_sweep_override():
        return [str(value) for value in override.sweep_string_iterator()]
    value = override.value()
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def check_group_options(cfg: DictConfig, overrides: list[str]) -> None:
    """RunnerError naming the first config group option selected by a path (an absolute one or one
    with a `..` part, which Hydra would read from outside the config folders): on the command line
    (every option of a sweep's list) or in a defaults list (the composed choices)."""
    choices = cfg.hydra.runtime.choices
    selected = [(f"{group}={option}", group, [option]) for group, option in choices.items() if option]
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.key_or_group
        if override.is_delete() or "." in key:
            continue
        present = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_resolution_failure=False) is not _ABSENT
        if key in choices or not present:  # a group, not a key (whose value need not resolve here)
            selected.append((override.input_line, key, _option_values(override)))
    _refuse_paths(selected)


def _parsed(arg: str) -> Override | None:
    """`arg` as a Hydra override, or None where it is none (a flag) or does not parse (Hydra then says why)."""
    if arg.startswith("-") or "=" not in arg:
        return None
    try:
        return OverridesParser.create().parse_override(arg)
    except HydraException:  # OverrideParseException, or the lexer's own
        return None


def _refuse_paths(selected: Iterable[tuple[str, str, list[str]]]) -> None:
    """RunnerError naming the first (what was said, group, options) whose options include a path, with
    the name that selects its file (`_by_name`)."""
    for said, group, options in selected:
        path = next((option for option in options if _is_path(option)), None)
        if path is not None:
            raise RunnerError(f"{said}: a config group option is a name, not a path; {_by_name(group, path)}")


def _by_name(group: str, option: str) -> str:
    """How to select the file a path `option` of `group` names: by its stem where it is in one of the
    config folders' `group/` (`configs/variant/x.yaml` is `variant=x`), else by its stem with the folder
    above its `group/` folder on the search path (a file in no `group/` folder moves into one first)."""
    file = PurePosixPath(option.replace("\\", "/"))
    name = file.stem if file.suffix in (".yaml", ".yml") else file.name
    folder = Path(os.path.abspath(Path(option).expanduser().parent))
    if folder in [root / group for root in (CONFIGS_DIR, BUILTIN_CONFIGS)]:
        return f"write {group}={name} (Hydra finds {option} by its name)"
    in_group = folder.name == PurePosixPath(group).name
    move = f"move the file to <folder>/{group}/{name}.yaml, "
    searched, move = (folder.parent, "") if in_group else ("<folder>", move)
    return (
        f"{move}write {group}={name} 'hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{searched}]' "
        "(a config folder of your own: docs/sweep.md#configuration)"
    )


_ABSENT = object()


def _is_path(option: str) -> bool:
    """Whether a config group option names a file by a path (it may leave the config folders), or by
    its file name (`x.yaml`, `configs/variant/x.yaml`), not by the option's name (an interpolation,
    `${...}`, is a value to resolve, not a file name)."""
    parts = PurePosixPath(option.replace("\\", "/")).parts
    named_file = option.endswith((".yaml", ".yml")) and "${" not in option
    return named_file or option.startswith(("/", "\\", "~")) or ".." in parts or "://" in option
