"""Where the sweep's time goes (`make sweep-cost` -> results/sweep_cost.csv): real sweep cases run
afresh with the CPU seconds of each phase of `retrofit.runner.case.run_case` (`PhaseCosts`), with
and without the shared stages, and what a fresh process pays to import the sweep.

    costs = PhaseCosts()
    run_case(case, costs=costs)
    costs.seconds   # {"fit": ..., "patch": ..., "predict": ..., "timing": ..., "rows": ...}

Phases: `fit` (load, split, fit), `patch` (every `retrofit.retrofit` call), `predict` (one call per
model, the shared stages computed once), `timing` (fitting and patching the timing regressor, and
its interleaved rounds), `rows` (scores, rows, unit files). CPU time of this process
(`time.process_time`), so other load on the machine does not count, and one thread per case (the
sweep's default) makes it the work done.
"""

import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pandas as pd

from retrofit.adapters import ARCHITECTURES
from retrofit.hosts.validation import architecture_name
from retrofit.runner.case import Case, run_case

PHASES = ("fit", "patch", "predict", "timing", "rows")
COLUMN_DOCS = {
    "host": ("label", "host label"),
    "dataset": ("label", "dataset name"),
    "seed": ("integer", "the case's seed"),
    "timing_rounds": ("count", "interleaved timing rounds of the case (0: untimed)"),
    "shared_stages": ("flag", "whether the stages before the in-context blocks were computed once for all models"),
    "repeat": ("integer", "repetition of the case (from 0)"),
    "phase": ("label", "`fit`, `patch`, `predict`, `timing` or `rows` (module docstring), or the import"),
    "cpu_s": ("CPU s", "CPU seconds of this process in the phase (`time.process_time`)"),
}
"""Column -> (unit, meaning) of `results/sweep_cost.csv`, in order."""
COLUMNS = tuple(COLUMN_DOCS)


@dataclass
class PhaseCosts:
    """CPU seconds per phase name, summed over every block timed under that name."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the block's CPU seconds to `seconds[name]`."""
        start = time.process_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - start


def cost_table(cases: list[Case], repeats: int) -> pd.DataFrame:
    """CPU seconds per phase (`COLUMNS`) of every case of `cases`, each run afresh (`overwrite`)
    `repeats` times, with and without the shared stages where its host's architecture has them
    (the two in rotating order, interleaved with the other cases, so slow phases of the machine
    hit both)."""
    rows = []
    for repeat in range(repeats):
        for case in cases:
            modes = (True, False) if ARCHITECTURES[architecture_name(case.host_path)].shared_stages else (True,)
            for shared in modes[repeat % len(modes) :] + modes[: repeat % len(modes)]:
                costs = PhaseCosts()
                run_case(replace(case, overwrite=True), costs=costs, shared_stages=shared)
                settings = (case.host, case.dataset.name, case.seed, case.timing_rounds, shared, repeat)
                rows += [
                    dict(zip(COLUMNS, (*settings, phase, costs.seconds.get(phase, 0.0)), strict=True))
                    for phase in PHASES
                ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def import_seconds(modules: tuple[str, ...] = ("retrofit.jobs", "retrofit.runner.case")) -> float:
    """CPU seconds a fresh interpreter takes to import `modules` (what every sweep process pays first)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import " + ", ".join(modules)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
