"""The jobs of a multirun, as its sweeper will launch them: their overrides (`sweep_jobs`, cheap,
counted before they are expanded and bounded by `MAX_JOBS`) and their composed configs
(`sweep_job_configs`, a Hydra composition each), composed once per multirun config and handed to
every check of it (`retrofit.jobs.preflight.CheckWrites` checks what each job writes,
`retrofit.runner.sweep_config` builds each job's case).

It imports Hydra and OmegaConf only: the entry point expands a command's jobs before any model loads.
"""

import math

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from hydra.utils import get_class
from omegaconf import DictConfig

from retrofit.bounds import MAX_JOBS
from retrofit.errors import RunnerError
from retrofit.runner import command_overrides


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job the sweeper will launch for this multirun `config`:
    `hydra.sweeper.params`, then the command line, expanded by the configured sweeper itself
    (Hydra's basic sweeper, named by its config string `hydra.sweeper._target_`). RunnerError,
    before any list is expanded, for more than `MAX_JOBS` jobs (`job_count`), and for a job listed
    twice (`seed=0,0`), naming both."""
    sweeper = get_class(config.hydra.sweeper._target_)
    if not hasattr(sweeper, "split_arguments"):
        raise RunnerError(f"hydra.sweeper={config.hydra.sweeper._target_}: the sweep runs with Hydra's basic sweeper")
    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    overrides = OverridesParser.create().parse_overrides([*params, *command_overrides(config.hydra)])
    count = job_count(overrides)
    if count > MAX_JOBS:
        raise RunnerError(
            f"this sweep has {count} jobs, more than the {MAX_JOBS} one command runs "
            "(retrofit.bounds.MAX_JOBS: each is composed and checked before the first runs); "
            f"split it into sweeps of at most {MAX_JOBS} jobs, e.g. one per seed or per dataset"
        )
    try:
        (jobs,) = sweeper.split_arguments(overrides, None)
    except HydraException as err:
        raise RunnerError(f"{err}: sweep lists of values (a,b,c or choice(a,b,c))") from None
    first: dict[tuple[str, ...], int] = {}
    for num, job in enumerate(jobs):
        same = first.setdefault(tuple(job), num)
        if same != num:
            raise RunnerError(
                f"jobs {same} and {num} of this sweep are the same job ({' '.join(job)}); list each value once"
            )
    return jobs


def job_count(overrides: list[Override]) -> int:
    """How many jobs the basic sweeper makes of `overrides`, counted without expanding them: the
    product of the values of each key's last override (a `range` counted from its bounds)."""
    counts = {}
    for override in overrides:
        counts[override.get_key_element()] = _values(override) if override.is_discrete_sweep() else 1
    return math.prod(counts.values())


def _values(override: Override) -> int:
    if override.is_range_sweep():
        sweep = override.value()
        return max(0, math.ceil((sweep.stop - sweep.start) / sweep.step))
    return sum(1 for _ in override.sweep_string_iterator())


_COMPOSED: list[tuple[DictConfig, list[DictConfig]]] = []
"""The multirun config whose jobs were composed last, and their configs (`sweep_job_configs`)."""


def sweep_job_configs(config: DictConfig) -> list[DictConfig]:
    """The composed config (with its `hydra` node) of every job of the multirun `config`
    (`sweep_jobs`), as the launcher composes it (its `hydra.job.num` not yet set), composed on the
    first call for this config object and the same list returned to every later call (Hydra hands
    one config object to every callback of a multirun). The configs are shared: read, never change them."""
    if _COMPOSED and _COMPOSED[0][0] is config:
        return _COMPOSED[0][1]
    loader = GlobalHydra.instance().config_loader()
    jobs = [loader.load_sweep_config(config, job) for job in sweep_jobs(config)]
    _COMPOSED[:] = [(config, jobs)]
    return jobs
