"""A Hydra callback that checks a whole sweep before any job runs, shows its progress, and sums it up.

Before the first job (`on_multirun_start`) it expands the sweep as Hydra's basic sweeper does
(`hydra.sweeper.params`, then command-line overrides, a later value of a key replacing an earlier
one; the cartesian product of the swept values) with Hydra's public override parser, composes every
job's config, builds each job's `Case` (which validates dataset specs, variants and host files),
loads and splits each job's data (so a bad table fails before any unit is written) and rejects
units that two jobs would run differently (jobs that differ only in `variant` share the case's
baseline unit). Notices the jobs would repeat are said once, and one progress bar over the
sweep's units runs while the launcher runs the jobs (`retrofit.runner.console`). After the last job
(`on_multirun_end`) it writes the sweep's results from exactly its own units (`finish_sweep`),
whatever else the unit store holds, and, with `reference=<csv>`, checks them against that file as
committed before the sweep began; then it prints the headline table, the files written and the
reproduction line.
"""

import itertools
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from retrofit.errors import RunnerError, exit_on_user_error
from retrofit.runner import console
from retrofit.runner.aggregate import aggregate, headline, outputs
from retrofit.runner.case import Case, check_cases
from retrofit.runner.collect import sweep_records
from retrofit.runner.config import case_from_hydra
from retrofit.runner.reproduce import Reference, require_covered, verify
from retrofit.runner.schema import reference_of, resolve, results_dir_of


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


def markers_dir(config: DictConfig) -> Path:
    """Where the running jobs of this sweep say which case they run (`console.job_marker`)."""
    return resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir) / console.MARKERS


def finish_sweep(config: DictConfig, cases: list[Case], reference: Reference | None) -> pd.DataFrame:
    """Aggregate the units of `cases` into `results_dir`; with a `reference` (read before the sweep),
    check that the new `retrofit_rmse.csv` reproduces it (`reproduction.txt`; RunnerError if not)."""
    results_dir = results_dir_of(config, config.hydra)
    frame = aggregate(results_dir, sweep_records(cases))
    written = [results_dir / name for name in outputs(frame)]
    sweep_dir = resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir)
    console.report(headline(frame), written, f"{sweep_dir}/<job>/{config.hydra.job.name}.log", [])
    if reference is not None:
        verify(results_dir, reference)
    return frame


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
    """Reject an invalid sweep before anything runs; one progress bar over its units; the sweep's
    results, headline table and reproduction check after the last job."""

    def __init__(self) -> None:
        self.progress: console.UnitProgress | None = None
        self.cases: list[Case] = []
        self.reference: Reference | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Parallel launchers send the callbacks to their workers: without the bar's thread."""
        return {**self.__dict__, "progress": None}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_any_error():
            with console.collected_notices() as notices:
                self.cases = sweep_cases(config)
                check_cases(self.cases)
            self.reference = reference_of(config, Path(config.hydra.runtime.cwd))
            require_covered(self.reference, (case.key(unit) for case in self.cases for unit in case.units))
            for notice in notices:
                console.say(f"note: {notice}")
            self.progress = console.UnitProgress(self.cases, markers_dir(config)).__enter__()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)
        with exit_on_any_error():
            finish_sweep(config, self.cases, self.reference)
