"""The jobs, and the one way each starts.

A job is a module of this package that declares its root config and that config's schema, and runs
it from the composed config and `HydraConfig.get()`:

    CONFIG = "exactness"          # configs/exactness.yaml
    SCHEMA = ExactnessConfig      # its keys and types (a dataclass)

    def run(cfg: DictConfig, hydra_cfg: DictConfig) -> None: ...

`launch("exactness")` starts it, the same way for every entry point (`experiments/<name>.py`,
`python -m retrofit <job>`): the home directory is checked before anything heavy is imported
(`check_home`); the schema is stored in Hydra's ConfigStore as `<CONFIG>_schema`, which the root
config lists first in its defaults, so a key the schema lacks or a value of the wrong type fails
when the config is composed, naming it; Hydra reads the command line (`--help`, `-m`,
`--config-name`, overrides; `-v` is `log_level=INFO`) and names the job after its module. Every
error a user can fix ends in one line `error: <what> (<fix>)` and a non-zero exit, never a
traceback: a config that does not compose (an unknown option or key, a bad value, a `!!python` tag)
and Ctrl-C (`interrupted`, exit 130) through `retrofit.jobs.exits.entry_errors`, a refused
input through `retrofit.errors.exit_on_user_error`. `+key=value` adds a key Hydra leaves
unchecked; each `run` (`retrofit.jobs.start`) refuses it before any work.

A job module imports at its top only what its `SCHEMA` needs (dataclasses, omegaconf, the
schema's module, `retrofit.jobs.start`, `retrofit.errors`); what `run` needs that is heavy (torch,
tabpfn, sklearn, shapiq, pandas, or a module importing them) it imports inside `run`, or inside the
helper that uses it. `launch` imports the job to store its schema, so a config error is answered
before torch loads: in under a second rather than in the seconds the models take to import.

Jobs are found by reading this package's sources (`declared_configs`), so finding one imports none,
and importing this package imports no job. It registers the resolver `${group_options:<group>}`
with which a root config's `hydra.help.template` lists each group's options as Hydra finds them.
"""

import ast
import functools
import os
import sys
from importlib import import_module
from pathlib import Path
from types import ModuleType

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from retrofit.errors import exit_on_user_error
from retrofit.jobs.exits import FULL_ERROR, entry_errors, schema_keys

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"
"""The root configs (`configs/<name>.yaml`) and their groups."""
USAGE = 2
"""The exit status of a command that cannot start: an unusable home directory, an unknown job."""
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


def declared_configs() -> dict[str, str]:
    """Root config -> the job (module of this package) whose `CONFIG` names it, read from the
    modules' sources, so nothing is imported."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = [target.id for target in getattr(node, "targets", []) if isinstance(target, ast.Name)]
            if names == ["CONFIG"] and isinstance(node.value, ast.Constant):
                found[node.value.value] = path.stem
    return found


def job_names() -> list[str]:
    """The jobs of this package: the modules declaring `CONFIG`."""
    return sorted(set(declared_configs().values()))


def job_module(job: str) -> ModuleType:
    """The module of job `job` (imported now); an unknown job exits with one line naming the jobs."""
    jobs = job_names()
    if job not in jobs:
        sys.stderr.write(f"error: no job {job!r} (one of {', '.join(jobs)}; python -m retrofit lists them)\n")
        raise SystemExit(USAGE)
    return import_module(f"{__name__}.{job}")


def schema_of(config: str) -> type:
    """The schema of root config `config`: the `SCHEMA` of the job declaring it (imported now)."""
    return import_module(f"{__name__}.{declared_configs()[config]}").SCHEMA


def register(*configs: str) -> None:
    """Store the schema of each root config in `configs` (none given: every one) in Hydra's
    ConfigStore as `<config>_schema`, where the root configs' defaults find it."""
    for config in configs or declared_configs():
        ConfigStore.instance().store(name=f"{config}_schema", node=schema_of(config))


HELP = ("--help", "-h", "--hydra-help")
"""Flags that only print help: answered without importing the job (its models), in about a second."""


def show_help(job: str) -> None:
    """Hydra's help for job `job` without importing it: its root config (read off its source,
    `declared_configs`) composed over an untyped placeholder of its schema, enough to print."""
    config = {name: config for config, name in declared_configs().items()}.get(job) or job_module(job).CONFIG
    ConfigStore.instance().store(name=f"{config}_schema", node={})

    def task(cfg: DictConfig) -> None:  # never called: Hydra prints the help and exits
        pass

    task.__module__ = f"{__name__}.{job}"  # Hydra names the app after the task's module, as for a run
    hydra.main(version_base="1.3", config_path=str(CONFIGS_DIR), config_name=config)(task)()


def launch(job: str) -> None:
    """Run job `job` (a module of this package) on the command line in `sys.argv`, as the module
    docstring says."""
    check_home()
    sys.argv = ["log_level=INFO" if arg in VERBOSE else arg for arg in sys.argv]
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

        @functools.wraps(module.run)  # Hydra names the job after the module of the function it runs
        def task(cfg) -> None:
            with exit_on_user_error():
                module.run(cfg, HydraConfig.get())

        hydra.main(version_base="1.3", config_path=str(CONFIGS_DIR), config_name=module.CONFIG)(task)()
