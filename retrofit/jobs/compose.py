"""The config a command would run, composed before Hydra acts, as Hydra's `hydra.main` composes it.

Hydra acts on a config as soon as it has composed it: it configures its own logging, instantiates
the callbacks, then the sweeper and launcher a multirun names, all before the first callback runs.
A check inside Hydra therefore comes after whatever code a config names. `command_config` composes
the command first, the way Hydra 1.3's `_run_hydra` does for a run or a multirun (the job's config
folder on the search path, `--config-dir` before the schemas, `--config-path`, `--config-name`, the
mode of `-m` or of `hydra.mode`, nothing written and nothing instantiated), so that
`retrofit.jobs.preflight` refuses a command before Hydra does anything with it. A command that
runs nothing (`--cfg`, `--info`, `--shell-completion`, the help flags) is not composed here, and
`--experimental-rerun`, which unpickles a saved config (a pickle runs code), is refused, as is a
command line Hydra would end in a traceback: two of its modes (`-m` with `--cfg`), `--resolve`
without `--cfg` (`check_modes`).

It uses Hydra's private `_internal` API, as this module and `retrofit.jobs.sources` may (hydra-core is pinned in
`pyproject.toml`): Hydra's public API composes no config of a `--config-dir` command nor of a
multirun, and a config composed otherwise than Hydra composes it would check another config than
the one that runs. `tests/test_compose.py` holds it to what Hydra composes.
"""

import os
from collections.abc import Callable
from typing import Any

from hydra._internal.hydra import Hydra  # noqa: TID251 - the module docstring says why
from hydra._internal.utils import (  # noqa: TID251
    create_automatic_config_search_path,
    detect_calling_file_or_module_from_task_function,
    detect_task_name,
    get_args_parser,
)
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import SearchPathException
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import RunnerError

MODES = {
    "run": "-r/--run",
    "multirun": "-m/--multirun",
    "cfg": "-c/--cfg",
    "info": "-i/--info",
    "shell_completion": "-sc/--shell-completion",
}
"""What Hydra does with a command (its parsed argument -> the flags), of which a command takes one."""
ONE_JOB = "; to see the config of one job of a sweep, drop -m and give each swept key one value"


def check_modes(args: Any) -> None:
    """RunnerError, one line, for parsed arguments `args` that Hydra would refuse with a traceback
    (its ValueError): two of its `MODES` (such as `-m` with `--cfg`), or `--resolve` without `--cfg`."""
    given = [flags for mode, flags in MODES.items() if getattr(args, mode) not in (None, False)]
    if len(given) > 1:
        hint = ONE_JOB if args.multirun and args.cfg else ""
        raise RunnerError(f"{' and '.join(given)} each choose what Hydra does, and a command does one (keep one{hint})")
    if args.resolve and args.cfg is None:
        raise RunnerError("--resolve resolves the config that --cfg prints (add --cfg job, or drop --resolve)")


def flags_first(argv: list[str]) -> list[str]:
    """The command line `argv` (after the program) with Hydra's flags, each with its value, before
    its overrides, both in their order: Hydra's parser takes overrides only in one run, so
    `seed=1 -m seed=2,3` ended in its usage and "unrecognized arguments: seed=2,3", a valid override."""
    valued = {name: act for act in get_args_parser()._actions for name in act.option_strings if act.nargs != 0}
    flags, overrides, at = [], [], 0
    while at < len(argv):
        token, action = argv[at], valued.get(argv[at])
        at += 1
        if not token.startswith("-"):
            overrides.append(token)
            continue
        flags.append(token)
        if action is None:
            continue
        if action.nargs == "?" and (at == len(argv) or argv[at] not in action.choices):  # --info [what]
            flags.append(action.const)  # said, or the parser would take an override moved after it for its value
        elif at < len(argv):
            flags.append(argv[at])
            at += 1
    return flags + overrides


def command_config(
    argv: list[str], config_path: str, config_name: str, task: Callable[[DictConfig], Any]
) -> tuple[DictConfig, RunMode] | None:
    """The composed config (with its `hydra` node) and mode of the command line `argv` (after the
    program) of a `hydra.main(config_path=config_path, config_name=config_name)` app running
    `task`; None for a command that runs no job. Hydra's own errors (an unknown option, a missing
    `--config-dir`) propagate as Hydra raises them; Hydra's global state is cleared afterwards."""
    args = get_args_parser().parse_args(argv)
    if args.experimental_rerun is not None:
        raise RunnerError(
            "--experimental-rerun unpickles a saved config, and a pickle runs code; "
            "run the command again with the overrides in its .hydra/overrides.yaml"
        )
    check_modes(args)
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return None
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task)
    path = config_path if args.config_path is None else args.config_path
    search_path = create_automatic_config_search_path(calling_file, calling_module, path)
    if args.config_dir is not None:
        folder = os.path.abspath(args.config_dir)
        if not os.path.isdir(folder):
            raise SearchPathException(f"Additional config directory '{folder}' not found")
        search_path.prepend("command-line", f"file://{folder}", anchor=SearchPathQuery(provider="schema"))
    task_name = detect_task_name(calling_file, calling_module)
    hydra = Hydra.create_main_hydra2(task_name=task_name, config_search_path=search_path)
    try:
        name = config_name if args.config_name is None else args.config_name
        overrides = list(args.overrides)
        mode = hydra.get_mode(config_name=name, overrides=overrides)
        if mode is None or (args.multirun and mode == RunMode.RUN):  # as Hydra's _run_app records the mode
            mode = RunMode.MULTIRUN if args.multirun else RunMode.RUN
            overrides.append(f"hydra.mode={mode.name}")
        return hydra.compose_config(name, overrides, run_mode=mode, with_log_configuration=False), mode
    finally:
        GlobalHydra.instance().clear()
