"""Where a case's time goes: this process's CPU seconds per phase of `run_case` (`make sweep-cost`).

    costs = PhaseCosts()
    run_case(case, costs=costs)
    costs.seconds   # {"fit": ..., "patch": ..., "predict": ..., "timing": ..., "rows": ...}

Phases: `fit` (load, split, fit), `patch` (every `retrofit.retrofit` call), `predict` (one call per
model, the shared stages computed once), `timing` (fitting and patching the timing regressor, and
its interleaved rounds), `rows` (scores, rows, unit files). CPU time of this process
(`time.process_time`), so other load on the machine does not count, and one thread per case (the
sweep's default) makes it the work done.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

PHASES = ("fit", "patch", "predict", "timing", "rows")


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
