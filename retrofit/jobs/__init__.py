"""The one way each job starts (`launch`), and where the jobs are: the `experiments` package.

A job is a module of `experiments` (`experiments/<name>.py` is job `<name>`; that package's
docstring gives the convention): its `SCHEMA`, the dataclass of its root config's keys, and
`run(job)`, which runs the `retrofit.jobs.start.JobStart` that `launch` builds from the composed
config and `HydraConfig.get()` (`retrofit.jobs.start.job_start`: the settings checked against
`SCHEMA`, a schema object unless the module sets `AS_OBJECT = False`; the start directory; the
device). Its root config is
`configs/<name>.yaml`, or the one its `CONFIG` names, with the Hydra overrides its `OVERRIDES`
appends to every command line (`aggregate` runs the sweep's with its own callback). The folder is
the table of jobs (`job_names` lists its files), and `launch` imports the job it runs by its name
(a string), so this library imports no experiment (`make lint` checks it).

`launch("sweep")` starts it, the same way for every entry point (`experiments/<name>.py`,
`python -m retrofit <job>`, the console script `retrofit`): the home directory is checked before
anything heavy is imported (`check_home`); the schema is stored in Hydra's ConfigStore as
`<root config>_schema`, which the root config lists first in its defaults, so a key the schema
lacks or a value of the wrong type fails when the config is composed, naming it; Hydra reads the
command line (`--help`, `-m`, `--config-name`, overrides; `-v` is `log_level=INFO`; flags and
overrides in any order, `retrofit.jobs.compose.flags_first`) and names the
job after its module's last name (`hydra.job.name`), which names its log file and, under
`configs/hydra/default.yaml`, its run folder. Every error a user can fix ends in one line
`error: <what> (<fix>)` and a non-zero exit, never a traceback: an unknown job (status `USAGE`),
a config that does not compose (an unknown option or key, a bad value, a `!!python` tag), a value
whose interpolation does not resolve (its key, the value as written and the fix) and Ctrl-C
(`interrupted`, exit 130) through `retrofit.jobs.exits.entry_errors`, a refused input (a bad
`RETROFIT_MAX_WORK` among them, read before Hydra acts) through
`retrofit.errors.exit_on_user_error`, a full device through `retrofit.jobs.exits.exit_on_full_disk`
(the folder on it: Hydra's run or sweep folder, or the file a job wrote). Before Hydra acts, the
command's config is composed as Hydra will compose it (`retrofit.jobs.compose`, which refuses two
of Hydra's modes at once, such as `-m` with `--cfg`) and checked
(`retrofit.jobs.preflight`): it names no code but the project's own (`retrofit.jobs.instantiated`),
and, for the whole command, its search path imports no package but Hydra's and the project's config
packages (`retrofit.jobs.sources`),
and nothing Hydra would write lands in the committed record unless a record target runs it; Hydra's
own compositions of the command are held to the same checks as it makes them
(`retrofit.jobs.compositions`).
`+key=value` adds a key Hydra leaves unchecked; `job_start` refuses it, naming the root config,
before `run` is called.

An experiment module imports at its top only what its `SCHEMA` needs, and what `run` needs that is
heavy (torch, tabpfn, sklearn, shapiq, pandas) inside `run`: `launch` imports the job to store its
schema, so `--help` and a config error are answered before torch loads, in under a second rather
than in the seconds the models take to import. This package also registers the resolvers
`${group_options:<group>}`, with which a root config's `hydra.help.template` lists a group's options
as Hydra finds them, and `${job_groups:}`, with which every job's `--help` (`configs/hydra/default.yaml`)
lists the groups that job selects from, each with its options.
"""

import difflib
import functools
import os
import sys
from importlib import import_module
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import ModuleType

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.bounds import max_work
from retrofit.data.spec import DATASET_KEYS
from retrofit.errors import exit_on_user_error, printable_output
from retrofit.hosts.locate import CLI_ARGUMENT, checkpoint_argument
from retrofit.jobs.exits import FULL_ERROR, entry_errors, exit_on_full_disk, schema_keys
from retrofit.jobs.sources import listed_sources

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"
"""The root configs (`configs/<name>.yaml`) and their groups."""
EXPERIMENTS = "experiments"
"""The package whose modules are the jobs, one per file (imported by name only)."""
USAGE = 2
"""The exit status of a command that cannot start: an unusable home directory, an unknown job."""
VERBOSE = ("-v", "--verbose")
"""Flags read as `log_level=INFO` (Hydra itself takes only overrides)."""
HELP = ("--help", "-h", "--hydra-help")
"""Flags that only print help: answered from the root config, before any model is imported."""
JOB_FULL_DISK = "free space there, or give the job's outputs (results_dir, cache_dir, output) another device"
"""What to do when a job's own writes find its device full."""


def group_options(group: str, *, _root_: DictConfig) -> str:
    """The options of config group `group` on the composed config's search path (the root config's
    `hydra.searchpath`, with what the command line added), comma-separated: a dataset or variant
    added as one file on the search path is listed by `--help` with no second edit."""
    searchpath = f"hydra.searchpath=[{','.join(_root_.hydra.searchpath)}]"
    loader = GlobalHydra.instance().config_loader()
    options = loader.get_group_options(group, config_name=_root_.hydra.job.config_name, overrides=[searchpath])
    return ", ".join(sorted(options))


def job_groups(*, _root_: DictConfig) -> str:
    """The config groups the composed job selects from (its defaults list's, Hydra's own `hydra/...`
    aside), one line each with its options (`group_options`): what a job's `--help` lists
    (`configs/hydra/default.yaml`), its own groups and not every folder of `configs/`."""
    groups = sorted(group for group in _root_.hydra.runtime.choices if not group.startswith("hydra"))
    return "\n".join(f"{group}: {group_options(group, _root_=_root_)}" for group in groups) or NO_GROUPS


NO_GROUPS = "(no config groups, only the keys below)"
"""What `job_groups` lists for a job of keys only."""

OmegaConf.register_new_resolver("group_options", group_options, replace=True)
OmegaConf.register_new_resolver("job_groups", job_groups, replace=True)
OmegaConf.register_new_resolver("pid", os.getpid, replace=True, use_cache=True)
"""`${pid:}`: this process's id, which `configs/hydra/default.yaml` adds to the run and sweep folders
so that two commands started in the same second get a folder each (cached per config, as `${now:}`
is, so a sweep's jobs share their command's folder)."""


def check_home() -> None:
    """Exit with one line (status `USAGE`) unless skrub's data folder exists or can be created:
    tabpfn imports skrub, which creates `$SKB_DATA_DIRECTORY` (when absolute) or `~/skrub_data`
    on import, so a home directory that is a file or not writable would end a job in a traceback."""
    own = os.environ.get("SKB_DATA_DIRECTORY", "")
    variable, folder = ("SKB_DATA_DIRECTORY", Path(own)) if Path(own).is_absolute() else ("HOME", Path.home())
    data = folder if variable == "SKB_DATA_DIRECTORY" else folder / "skrub_data"
    existing = next(path for path in (data, *data.parents) if path.exists())
    if existing.is_dir() and (existing == data or os.access(existing, os.W_OK)):
        return
    where = f"{variable}={folder}" + ("" if existing == folder else f" ({existing})")
    reason = "is not a directory" if not existing.is_dir() else "is not writable"
    sys.stderr.write(f"error: {where} {reason} (set {variable} to a writable directory)\n")
    raise SystemExit(USAGE)


def jobs_in(folder: Traversable) -> list[str]:
    """The jobs of an experiments folder: its modules' names (`<name>.py`, not `_private.py`)."""
    names = (entry.name.removesuffix(".py") for entry in folder.iterdir() if entry.name.endswith(".py"))
    return sorted(name for name in names if not name.startswith("_"))


def job_names() -> list[str]:
    """The jobs: the modules of the `experiments` package, read off its folder (none imported)."""
    return jobs_in(files(EXPERIMENTS))


def job_module(job: str) -> ModuleType:
    """The module of job `job`, imported now by its name; an unknown job exits with one line
    naming the closest job and every one (status `USAGE`)."""
    jobs = job_names()
    if job not in jobs:
        close = difflib.get_close_matches(job, jobs, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        sys.stderr.write(f"error: no job {job!r} ({hint}one of {', '.join(jobs)}; `retrofit` lists them)\n")
        raise SystemExit(USAGE)
    return import_module(f"{EXPERIMENTS}.{job}")


def root_config(module: ModuleType) -> str:
    """The root config of a job's module: the one its `CONFIG` names, else its own name's."""
    return getattr(module, "CONFIG", module.__name__.rsplit(".", 1)[-1])


def job_configs() -> dict[str, str]:
    """Root config -> the job that runs it as its own (without `OVERRIDES`; the job of its name where
    two do, as a former name runs its new one's), every job imported."""
    modules = {job: job_module(job) for job in job_names()}
    owned = {root_config(module): job for job, module in modules.items() if not getattr(module, "OVERRIDES", ())}
    return owned | {config: config for config in owned if config in modules}


def register(*jobs: str) -> None:
    """Store the schema of each job of `jobs` (none given: every one) in Hydra's ConfigStore as
    `<its root config>_schema`, where the root config's defaults find it."""
    for job in jobs or job_names():
        module = job_module(job)
        ConfigStore.instance().store(name=f"{root_config(module)}_schema", node=module.SCHEMA)


def launch(job: str) -> None:
    """Run job `job` (a module of `experiments`) on the command line in `sys.argv`, as the module
    docstring says."""
    printable_output()
    check_home()
    from retrofit.jobs.compose import command_config, flags_first

    given = flags_first(["log_level=INFO" if arg in VERBOSE else arg for arg in sys.argv[1:]])  # any order
    os.environ[FULL_ERROR] = "1"  # Hydra re-raises; entry_errors says it in one line
    keys: list[str] = []  # the job's config keys, for the closest one to an unknown key
    with entry_errors(keys), exit_on_user_error(), listed_sources(), checkpoint_argument(CLI_ARGUMENT):
        module = job_module(job)
        config = root_config(module)
        sys.argv = [sys.argv[0], *given, *getattr(module, "OVERRIDES", ())]  # the job's own are not the user's
        main = hydra.main(version_base="1.3", config_path=str(CONFIGS_DIR), config_name=config)
        if any(arg in HELP for arg in given):  # the root config as written, over an untyped placeholder schema
            ConfigStore.instance().store(name=f"{config}_schema", node={})
            main(_named(module, lambda cfg: None))()  # Hydra prints the help and exits
            return
        register(job)
        max_work()  # a bad RETROFIT_MAX_WORK is said before Hydra acts, not at the first fit
        keys += schema_keys(module.SCHEMA)
        keys += [f"dataset.{key}" for key in DATASET_KEYS if "dataset" in keys]  # a free-form node, typed later
        from retrofit.jobs.compositions import checked_compositions, job_compositions
        from retrofit.jobs.preflight import check_command_line, check_composed
        from retrofit.jobs.start import check_required, job_start

        def task(cfg: DictConfig) -> None:  # in a launcher's worker too: refusals speak the command line
            with (
                exit_on_user_error(),
                exit_on_full_disk(JOB_FULL_DISK),
                job_compositions(),
                checkpoint_argument(CLI_ARGUMENT),
            ):
                module.run(job_start(module, cfg, HydraConfig.get()))

        named = _named(module, task)
        check_command_line(given, CONFIGS_DIR)  # the command line, then the config it composes, before Hydra acts
        composed = command_config(sys.argv[1:], str(CONFIGS_DIR), config, named)
        writes = {} if composed is None else check_composed(*composed)
        if composed is not None:
            cfg = composed[0]
            check_required(cfg, f"configs/{cfg.hydra.job.config_name}.yaml", cfg.hydra.runtime.choices)
        key, folder = next(iter(writes.items()), ("hydra.run.dir", None))
        disk_fix = f"free space there, or set {key} to a folder on another device"
        with exit_on_full_disk(disk_fix, folder), checked_compositions():  # Hydra's compositions checked too
            main(named)()


def _named(module: ModuleType, task):
    """`task` named as `module`'s `run`: Hydra names the job after the module of the function it runs."""
    return functools.wraps(module.run)(task)
