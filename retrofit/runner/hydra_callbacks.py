"""A Hydra callback that checks a whole sweep before any job runs, and shows its progress.

Before the first job (`on_multirun_start`) it expands the sweep as Hydra's basic sweeper does
(`hydra.sweeper.params`, then command-line overrides, a later value of a key replacing an earlier
one; the cartesian product of the swept values) with Hydra's public override parser, composes every
job's config, builds each job's `Case` (which validates dataset specs, variants and host files),
loads and splits each job's data (so a bad table fails before any unit is written) and rejects
duplicate unit keys. After the last job (`on_multirun_end`) it writes the sweep's results from
exactly its own units (`finish_sweep`), whatever else the unit store holds, and, with
`reference=<csv>`, checks them against that file as committed before the sweep began. A progress bar over
jobs is shown when jobs run in this process (the basic launcher); parallel launchers report
progress themselves.
"""

import itertools
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from tqdm.auto import tqdm

from retrofit.errors import RunnerError, exit_on_user_error
from retrofit.runner.aggregate import aggregate
from retrofit.runner.case import Case, check_cases, stored_rows
from retrofit.runner.config import case_from_hydra, reference_of, resolve
from retrofit.runner.reproduce import Reference, verify

_BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job the basic sweeper will launch for this multirun `config`."""
    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    overrides = OverridesParser.create().parse_overrides([*params, *config.hydra.overrides.task])
    values: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise RunnerError(f"{override.input_line}: only lists of values can be swept (a,b,c or choice(a,b,c))")
    return [list(job) for job in itertools.product(*values.values())]


def sweep_cases(config: DictConfig) -> list[Case]:
    """Compose every job of the sweep and build its `Case` (validating it)."""
    loader = GlobalHydra.instance().config_loader()
    job_cfgs = [loader.load_sweep_config(config, job) for job in sweep_jobs(config)]
    return [case_from_hydra(job_cfg, job_cfg.hydra) for job_cfg in job_cfgs]


def finish_sweep(config: DictConfig, cases: list[Case], reference: Reference | None) -> None:
    """Aggregate the units of `cases` into `results_dir`; with a `reference` (read before the sweep),
    check that the new `retrofit_rmse.csv` reproduces it (`reproduction.txt`; RunnerError if not)."""
    base_dir = Path(config.hydra.runtime.cwd)
    results_dir = resolve(base_dir, config.results_dir)
    stored = {key: row for case in cases for key, row in stored_rows(case).items()}
    missing = [str(key.relpath()) for key, row in stored.items() if row is None]
    if missing:
        raise RunnerError(
            f"{len(missing)} units of this sweep have no current result, e.g. {missing[0]}; rerun the sweep"
        )
    aggregate(results_dir, list(stored.values()))
    if reference is not None:
        verify(results_dir, reference)


@contextmanager
def exit_on_any_error() -> Iterator[None]:
    """`exit_on_user_error`, and any other exception (a bug) printed with its traceback, then exit 1:
    Hydra turns an exception in a callback into a warning, which would let a failed check pass."""
    try:
        with exit_on_user_error():
            yield
    except Exception:
        traceback.print_exc()
        raise SystemExit(1) from None


class CheckSweep(Callback):
    """Reject an invalid sweep before anything runs; progress bar over jobs; the sweep's results
    (and the reproduction check) after the last job."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None
        self.cases: list[Case] = []
        self.reference: Reference | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_any_error():
            self.cases = sweep_cases(config)
            check_cases(self.cases)
            self.reference = reference_of(config, Path(config.hydra.runtime.cwd))
        if config.hydra.launcher._target_ == _BASIC_LAUNCHER:
            self.bar = tqdm(total=len(self.cases), desc="sweep", unit="case")

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
        with exit_on_any_error():
            finish_sweep(config, self.cases, self.reference)
