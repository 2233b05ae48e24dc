"""Every config Hydra composes for a command is checked as it is made, before Hydra acts on it.

`hydra.main` composes the command's config again, itself: once for the mode (a composition whose
failure it swallows), once for the run or the multirun, and, in a multirun, once per job as the
launcher starts it. From the run's composition it configures its own logging (a handler's `filename`
is opened) and instantiates the callbacks it names before any callback runs, so `CheckWrites` comes
too late to hold a config file changed since the entry point checked its own composition
(`retrofit.jobs.preflight.check_composed`). `checked_compositions` holds Hydra's config loader to the
entry point's checks for the whole of `hydra.main`: each composition of the command gets
`check_command` (code it names, the callback, job settings, writes) as it is made; each job's
composition (`load_sweep_config`) gets the checks that hold whatever its job number: the code it
names (an option a job's override chooses may name some) and its job settings. Each job's folder and
log files are checked by `CheckWrites.on_multirun_start` before the first job runs. What the
project's own code composes to read (a config group's option on its own, no root config:
`retrofit.runner.sweep_config.group_option`, read by a callback or a job; any composition within a
job's run, which runs under `job_compositions`) is data read, not a config Hydra runs: not checked.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl  # noqa: TID251 - the module docstring says why
from hydra.types import RunMode
from omegaconf import DictConfig

from retrofit.errors import RunnerError
from retrofit.jobs.instantiated import check_instantiated
from retrofit.jobs.preflight import check_command, check_job_settings
from retrofit.runner import command_overrides
from retrofit.runner.sweep_jobs import sweep_jobs

_CHECKING = ContextVar("Hydra's compositions of the command are checked", default=False)


@contextmanager
def checked_compositions() -> Iterator[None]:
    """Within the block, every config Hydra's config loader composes is checked (module docstring)
    before it is returned; RunnerError, one line, for the first check that fails. The loader is
    restored afterwards."""
    checking = _CHECKING.set(True)
    load, load_job = ConfigLoaderImpl.load_configuration, ConfigLoaderImpl.load_sweep_config

    def load_checked(
        self: ConfigLoaderImpl, config_name: str | None, overrides: list[str], run_mode: RunMode, *args: Any, **kw: Any
    ) -> DictConfig:
        cfg = load(self, config_name, overrides, run_mode, *args, **kw)
        if _CHECKING.get() and config_name is not None:  # a root config, outside a job's composition or run
            check_command(cfg, run_mode)
        return cfg

    def load_job_checked(self: ConfigLoaderImpl, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        with job_compositions():
            job = load_job(self, master_config, sweep_overrides)
        try:
            check_instantiated(job)
            check_job_settings(job.hydra)
        except RunnerError as err:
            jobs, overrides = sweep_jobs(master_config), list(sweep_overrides)
            job_name = f"job {jobs.index(overrides)}" if overrides in jobs else "a job"  # as the launcher numbers it
            raise RunnerError(f"{job_name} ({' '.join(command_overrides(job.hydra))}): {err}") from None
        return job

    ConfigLoaderImpl.load_configuration, ConfigLoaderImpl.load_sweep_config = load_checked, load_job_checked
    try:
        yield
    finally:
        ConfigLoaderImpl.load_configuration, ConfigLoaderImpl.load_sweep_config = load, load_job
        _CHECKING.reset(checking)


@contextmanager
def job_compositions() -> Iterator[None]:
    """Within the block (a job's run, or the composition of one job's config, which
    `checked_compositions` checks as a whole), the config loader's compositions are not checked."""
    checking = _CHECKING.set(False)
    try:
        yield
    finally:
        _CHECKING.reset(checking)
