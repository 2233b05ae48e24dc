"""A Hydra callback that checks a whole sweep before any job runs, and shows its progress.

Before the first job (`on_multirun_start`) it expands the sweep exactly as Hydra's basic sweeper
does (`hydra.sweeper.params`, then command-line overrides), composes every job's config, builds
each job's `Case` (which validates dataset specs, variant names and host files), loads and splits
each job's data (so a bad table fails before any unit is written) and rejects duplicate unit
keys. A progress bar over jobs is shown when jobs run in this process (the basic
launcher); parallel launchers report progress themselves.
"""

from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from tqdm.auto import tqdm

from retrofit.runner.case import Case, check_cases
from retrofit.errors import exit_on_user_error
from retrofit.runner.config import case_from_hydra

_BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job the basic sweeper will launch for this multirun `config`."""
    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    overrides = OverridesParser.create().parse_overrides([*params, *config.hydra.overrides.task])
    return BasicSweeper.split_arguments(overrides, None)[0]


def sweep_cases(config: DictConfig) -> list[Case]:
    """Compose every job of the sweep and build its `Case` (validating it)."""
    loader = GlobalHydra.instance().config_loader()
    job_cfgs = [loader.load_sweep_config(config, job) for job in sweep_jobs(config)]
    return [case_from_hydra(job_cfg, job_cfg.hydra) for job_cfg in job_cfgs]


class CheckSweep(Callback):
    """Reject an invalid sweep before anything runs; progress bar over jobs."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_user_error():
            cases = sweep_cases(config)
            check_cases(cases)
        if config.hydra.launcher._target_ == _BASIC_LAUNCHER:
            self.bar = tqdm(total=len(cases), desc="sweep", unit="case")

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
