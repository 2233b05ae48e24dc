"""The records of a sweep's own units, stored rows labelled as the sweep's units label them, and
the sweep's results written from them (`finish_sweep`).

A stored unit row is shared by every sweep that runs that unit; the labels that depend on the sweep
(the decomposition `arm`, `arm_extra`) come from the `UnitSpec` of the current sweep (through its
jobs' manifests, `retrofit.runner.manifest`), so a unit some earlier sweep ran as an arm is not an
arm here unless this sweep says so. Nothing here builds a case: the aggregation of a finished store
imports no model.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from omegaconf import DictConfig

from retrofit.runner import console
from retrofit.runner.aggregate import aggregate, headline, noise_floors, outputs
from retrofit.runner.manifest import CaseManifest, current_records
from retrofit.runner.record import UnitRecord
from retrofit.runner.reproduce import Reference, verify
from retrofit.runner.schema import resolve, results_dir_of

if TYPE_CHECKING:
    from retrofit.runner.case import Case


def case_records(case: "Case", rows: Sequence[Mapping[str, Any]]) -> list[UnitRecord]:
    """The records of `rows` (one per unit of `case`, in order, as `run_case` returns them)."""
    return [UnitRecord.from_row(row).labelled(u.arm, u.arm_extra) for u, row in zip(case.units, rows, strict=True)]


def sweep_records(cases: Sequence["Case"]) -> list[UnitRecord]:
    """The records of every unit of `cases` from the unit store (`current_records`: RunnerError
    naming a unit without a current result)."""
    return current_records((CaseManifest.of(case), case.runs_dir) for case in cases)


def finish_sweep(config: DictConfig, records: Sequence[UnitRecord], reference: Reference | None) -> pd.DataFrame:
    """Aggregate a sweep's `records` into its `results_dir`, print the headline table and the files
    written; with a `reference` (read before the sweep), check that the new `retrofit_rmse.csv`
    reproduces it (`reproduction.txt`; RunnerError if not)."""
    results_dir = results_dir_of(config, config.hydra)
    frame = aggregate(results_dir, records)
    written = [results_dir / name for name in outputs(frame)]
    sweep_dir = resolve(Path(config.hydra.runtime.cwd), config.hydra.sweep.dir)
    console.report(headline(frame, noise_floors()), written, f"{sweep_dir}/<job>/{config.hydra.job.name}.log", [])
    if reference is not None:
        verify(results_dir, reference)
    return frame
