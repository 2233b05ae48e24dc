"""The jobs, and the one way each starts.

A job is a module of a job package (`JOB_PACKAGES`: this one holds the library's own jobs, the
sweep, the audit, the sink mass, the tau sweep, host pretraining; `benchmarks.jobs` the
benchmarks') that declares its root config and that config's schema, and
runs it from the composed config and `HydraConfig.get()`:

    CONFIG = "exactness"          # configs/exactness.yaml
    SCHEMA = ExactnessConfig      # its keys and types (a dataclass)

    def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None: ...

A job may run another job's root config with Hydra overrides of its own appended to every command
line (`OVERRIDES = [...]`: `aggregate` runs the sweep's config with its own callback).

`launch("exactness")` starts it, the same way for every entry point (`experiments/<name>.py`,
`python -m retrofit <job>`): the home directory is checked before anything heavy is imported
(`check_home`); the schema is stored in Hydra's ConfigStore as `<CONFIG>_schema`, which the root
config lists first in its defaults, so a key the schema lacks or a value of the wrong type fails
when the config is composed, naming it; Hydra reads the command line (`--help`, `-m`,
`--config-name`, overrides; `-v` is `log_level=INFO`) and names the job after its module's last
name (`hydra.job.name`: `exactness` for `benchmarks.jobs.exactness`), which names its log file
and, under `configs/hydra/default.yaml`, its run folder. Every error a user can fix ends in one
line `error: <what> (<fix>)` and a non-zero exit, never a traceback: a config that does not compose
(an unknown option or key, a bad value, a `!!python` tag) and Ctrl-C (`interrupted`, exit 130)
through `retrofit.jobs.exits.entry_errors`, a refused input through
`retrofit.errors.exit_on_user_error`. Before Hydra writes anything, what it would write is checked
(`retrofit.jobs.preflight`, a callback of every root config): nothing lands in the committed record
unless a record target runs it. `+key=value` adds a key Hydra leaves unchecked; each `run`
(`retrofit.jobs.start`) refuses it before any work.

A job module imports at its top only what its `SCHEMA` needs (dataclasses, omegaconf, the
schema's module, `retrofit.jobs.start`, `retrofit.errors`); what `run` needs that is heavy (torch,
tabpfn, sklearn, shapiq, pandas, or a module importing them) it imports inside `run`, or inside the
helper that uses it. `launch` imports the job to store its schema, so a config error is answered
before torch loads: in under a second rather than in the seconds the models take to import.

Jobs are found by reading the job packages' sources (`declared_jobs`), so finding one imports none,
and importing this package imports no job; `launch` imports the job it runs by its module's name (a
string), so the library has no import of `benchmarks` (`make lint` checks it). It registers the
resolver `${group_options:<group>}` with which a root config's `hydra.help.template` lists each
group's options as Hydra finds them.
"""

import ast
import difflib
import functools
import os
import sys
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.data.spec import DATASET_KEYS
from retrofit.errors import exit_on_user_error, printable_output
from retrofit.jobs.exits import FULL_ERROR, entry_errors, schema_keys

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"
"""The root configs (`configs/<name>.yaml`) and their groups."""
USAGE = 2
"""The exit status of a command that cannot start: an unusable home directory, an unknown job."""
JOB_PACKAGES = ("retrofit.jobs", "experiments")
"""The packages whose modules declaring `CONFIG` are the jobs: the library's, then the benchmarks'
(named here, imported by name only when one of their jobs runs)."""
VERBOSE = ("-v", "--verbose")
"""Flags read as `log_level=INFO` (Hydra itself takes only overrides)."""


def group_options(group: str, *, _root_: DictConfig) -> str:
    """The options of config group `group` on the composed config's search path (the root config's
    `hydra.searchpath`, with what the command line added), comma-separated: a dataset or variant
    added as one file on the search path is listed by `--help` with no second edit."""
    searchpath = f"hydra.searchpath=[{','.join(_root_.hydra.searchpath)}]"
    loader = GlobalHydra.instance().config_loader()
    options = loader.get_group_options(group, config_name=_root_.hydra.job.config_name, overrides=[searchpath])
    return ", ".join(sorted(options))


OmegaConf.register_new_resolver("group_options", group_options, replace=True)
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


class JobSource(NamedTuple):
    """Where a job is declared: its module's dotted name, the root config its `CONFIG` names, and
    the Hydra overrides its `OVERRIDES` appends to every command line (a job that runs another
    job's root config otherwise, as `aggregate` runs the sweep's with its own callback)."""

    module: str
    config: str
    overrides: tuple[str, ...] = ()


def _declared(path: Path, name: str) -> object:
    """The literal that the module source `path` assigns to the top-level `name`, or None."""
    for node in ast.parse(path.read_text()).body:
        names = [target.id for target in getattr(node, "targets", []) if isinstance(target, ast.Name)]
        if names == [name]:
            return ast.literal_eval(node.value)
    return None


def declared_jobs() -> dict[str, JobSource]:
    """Job (its module's last name) -> `JobSource`, for every module of `JOB_PACKAGES` that declares
    `CONFIG`, read from the modules' sources, so no job is imported (`find_spec` imports a job
    package's parent, never the package). A job or root config declared in two modules exits with
    one line naming both files."""
    found: dict[str, JobSource] = {}
    files: dict[str, str] = {}  # "job 'x'" or "root config 'x'" -> the file declaring it
    for package in JOB_PACKAGES:
        folder = Path(find_spec(package).submodule_search_locations[0])
        for path in sorted(folder.glob("*.py")):
            config = _declared(path, "CONFIG")
            if config is None:
                continue
            overrides = tuple(_declared(path, "OVERRIDES") or ())
            file = f"{package.replace('.', '/')}/{path.name}"
            owned = [f"job {path.stem!r}"] + ([] if overrides else [f"root config {config!r}"])
            for name in owned:
                if name in files:
                    sys.stderr.write(f"error: {name} is declared in both {files[name]} and {file} (rename one)\n")
                    raise SystemExit(USAGE)
                files[name] = file
            found[path.stem] = JobSource(f"{package}.{path.stem}", config, overrides)
    return found


def declared_configs() -> dict[str, str]:
    """Root config -> the job whose `CONFIG` names it with no `OVERRIDES` (`declared_jobs`)."""
    return {source.config: job for job, source in declared_jobs().items() if not source.overrides}


def job_names() -> list[str]:
    """The jobs of every job package: the modules declaring `CONFIG`."""
    return sorted(declared_jobs())


def job_source(job: str) -> JobSource:
    """Where job `job` is declared; an unknown job exits with one line naming the jobs."""
    jobs = declared_jobs()
    if job not in jobs:
        close = difflib.get_close_matches(job, jobs, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        sys.stderr.write(f"error: no job {job!r} ({hint}one of {', '.join(sorted(jobs))}; `retrofit` lists them)\n")
        raise SystemExit(USAGE)
    return jobs[job]


def job_module(job: str) -> ModuleType:
    """The module of job `job`, imported now by its name (`job_source`)."""
    return import_module(job_source(job).module)


def schema_of(config: str) -> type:
    """The schema of root config `config`: the `SCHEMA` of the job declaring it (imported now)."""
    modules = {source.config: source.module for source in declared_jobs().values() if not source.overrides}
    return import_module(modules[config]).SCHEMA


def register(*configs: str) -> None:
    """Store the schema of each root config in `configs` (none given: every one) in Hydra's
    ConfigStore as `<config>_schema`, where the root configs' defaults find it."""
    for config in configs or declared_configs():
        ConfigStore.instance().store(name=f"{config}_schema", node=schema_of(config))


HELP = ("--help", "-h", "--hydra-help")
"""Flags that only print help: answered without importing the job (its models), in about a second."""


def show_help(job: str) -> None:
    """Hydra's help for job `job` without importing it: its root config (read off its source,
    `declared_jobs`) composed over an untyped placeholder of its schema, enough to print."""
    source = job_source(job)
    ConfigStore.instance().store(name=f"{source.config}_schema", node={})

    def task(cfg: DictConfig) -> None:  # never called: Hydra prints the help and exits
        pass

    task.__module__ = source.module  # Hydra names the app after the task's module, as for a run
    hydra.main(version_base="1.3", config_path=str(CONFIGS_DIR), config_name=source.config)(task)()


def launch(job: str) -> None:
    """Run job `job` (a module of a job package) on the command line in `sys.argv`, as the module
    docstring says."""
    printable_output()
    check_home()
    given = ["log_level=INFO" if arg in VERBOSE else arg for arg in sys.argv[1:]]
    sys.argv = [sys.argv[0], *given, *job_source(job).overrides]  # the job's own overrides are not the user's
    os.environ[FULL_ERROR] = "1"  # Hydra re-raises; entry_errors says it in one line
    if any(arg in HELP for arg in sys.argv[1:]):
        with entry_errors():
            show_help(job)
        return
    keys: list[str] = []  # the job's config keys, for the closest one to an unknown key
    with entry_errors(keys):
        module = job_module(job)
        register(module.CONFIG)
        keys += schema_keys(module.SCHEMA)
        keys += [f"dataset.{key}" for key in DATASET_KEYS if "dataset" in keys]  # a free-form node, typed later
        from retrofit.jobs.preflight import check_command_line, require_checked

        with exit_on_user_error():  # what would take away the check of what Hydra writes
            check_command_line(given, CONFIGS_DIR)

        @functools.wraps(module.run)  # Hydra names the job after the module of the function it runs
        def task(cfg) -> None:
            with exit_on_user_error():
                require_checked(HydraConfig.get())
                module.run(cfg, HydraConfig.get())

        hydra.main(version_base="1.3", config_path=str(CONFIGS_DIR), config_name=module.CONFIG)(task)()
