"""What a run may instantiate: the project's own callbacks, Hydra's basic sweeper, the launchers the
project documents and the standard logging handlers; nothing else that a config names.

A Hydra config can name code in two ways: a `_target_` (Hydra instantiates each callback, the
sweeper and the launcher with the arguments the config gives, `_args_` included), and in its
logging configs (`hydra.job_logging`, `hydra.hydra_logging`, handed to `logging.config.dictConfig`)
a handler's or formatter's `class`, a `()` factory and an `ext://` name, which is imported.
`check_instantiated` refuses, in one line, any of these in a composed config that the tables below
do not list at that place, whichever source set it: the command line, a root config, an experiment
file, a `--config-dir` or `hydra.searchpath` folder (`retrofit.jobs.preflight` runs it before Hydra
acts). A config is data: no other place of it may hold a `_target_`.
"""

from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from retrofit.errors import RunnerError
from retrofit.jobs.exits import reason
from retrofit.jobs.launchers import BASIC, JOBLIB, SLURM, SUBMITIT_LOCAL, check_launcher

CHECK_WRITES = "retrofit.jobs.preflight.CheckWrites"
"""The callback every root config lists (`configs/hydra/default.yaml`): it checks what a run writes."""
CALLBACKS = (CHECK_WRITES, "experiments.sweep.CheckSweep", "experiments.aggregate.AggregateSweep")
"""The `_target_`s a `hydra.callbacks.<name>` entry may name: the project's own callbacks."""
SWEEPERS = ("hydra._internal.core_plugins.basic_sweeper.BasicSweeper",)
"""The `hydra.sweeper._target_`s: Hydra's basic sweeper (`retrofit.runner.sweep_jobs` expands its jobs)."""
LAUNCHERS = {BASIC: (), JOBLIB: ("temp_folder",), SUBMITIT_LOCAL: ("submitit_folder",), SLURM: ("submitit_folder",)}
"""The `hydra.launcher._target_`s (`retrofit.jobs.launchers`, whose `check_launcher` checks their
settings), each with the keys of its config that name a folder it writes (checked with Hydra's own)."""
LOGGING_CLASSES = ("logging.StreamHandler", "logging.FileHandler", "logging.Formatter")
"""The `class` a handler or formatter of Hydra's logging configs may name (Hydra's own use the first two)."""
STREAMS = ("ext://sys.stdout", "ext://sys.stderr")
"""The `ext://` names a logging config may give (a stream)."""
LOGGING = ("hydra.job_logging", "hydra.hydra_logging")
"""The logging configs (`logging.config.dictConfig`) of a composed config."""


def check_instantiated(cfg: DictConfig) -> None:
    """RunnerError naming the first place of the composed `cfg` (with its `hydra` node) that names
    code the tables of this module do not list there (module docstring), then for a launcher
    setting that runs code (`retrofit.jobs.launchers.check_launcher`)."""
    for key, value in _leaves(OmegaConf.to_container(cfg, resolve=False)):
        name = key.rsplit(".", 1)[-1]
        logging = key.startswith(tuple(f"{node}." for node in LOGGING))
        if name == "_target_":
            _check_target(key, _resolved(cfg, key))
        elif logging and name == "()":
            raise RunnerError(f"{key}: a logging factory is code a config names; remove it (formatters take `format`)")
        elif logging and name == "class":
            _check_listed(key, _resolved(cfg, key), LOGGING_CLASSES, "a logging class")
        elif logging and isinstance(value, str) and value.startswith("ext://"):
            _check_listed(key, _resolved(cfg, key), STREAMS, "an ext:// name")
    check_launcher(cfg.hydra.launcher)


def _check_target(key: str, target: Any) -> None:
    """RunnerError unless `target` is listed for the place `key` (a `..._target_` key)."""
    place = key.removesuffix("._target_")
    if place.startswith("hydra.callbacks.") and place.count(".") == 2:
        _check_listed(key, target, CALLBACKS, "a callback")
    elif place == "hydra.launcher":
        _check_listed(key, target, tuple(LAUNCHERS), "a launcher")
    elif place == "hydra.sweeper":
        _check_listed(key, target, SWEEPERS, "a sweeper")
    else:
        raise RunnerError(
            f"{key}={target}: a config is data, and only hydra.callbacks, hydra.launcher and hydra.sweeper "
            "name a class to instantiate; remove the _target_"
        )


def _check_listed(key: str, value: Any, listed: tuple[str, ...], what: str) -> None:
    if value not in listed:
        raise RunnerError(
            f"{key}={value}: a run instantiates no code a config names; as {what} it takes one of {', '.join(listed)}"
        )


def _resolved(cfg: DictConfig, key: str) -> Any:
    """The value of `key` in `cfg`, its interpolations resolved; RunnerError when they do not resolve."""
    try:
        return OmegaConf.select(cfg, key, throw_on_missing=True)
    except OmegaConfBaseException as err:
        raise RunnerError(
            f"{key} names code through an interpolation that does not resolve ({reason(err)}); give the name itself"
        ) from None


def _leaves(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every key of the plain container `node`, depth first (a list item's
    key is its index)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    leaves = []
    for name, value in items:
        key = f"{prefix}{name}"
        leaves.append((key, value))
        leaves += _leaves(value, f"{key}.")
    return leaves
