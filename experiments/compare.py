"""The former name of diff, kept so that commands written for it still run: the same job, config
(`configs/diff.yaml`) and arguments as `experiments/diff.py`, after one line on stderr that gives the
new name (`RENAMED`). `make compare A=<csv> B=<csv>` runs it, and so says the same.

The name went to `retrofit.compare`, which runs variants on a table: a results file diff is `diff`.
"""

import sys

from experiments import diff
from retrofit.jobs.start import JobStart

CONFIG = "diff"
"""The root config: diff's own."""
SCHEMA = diff.SCHEMA
RENAMED = (
    "note: the results-file diff is now called diff (retrofit diff a=<csv> b=<csv>, make diff A=<csv> B=<csv>); "
    "compare still runs it, and the name compare belongs to retrofit.compare, which runs variants on a table\n"
)
"""The line every route through the old name prints first, on stderr."""


def run(job: JobStart) -> None:
    """`diff.run(job)` after the `RENAMED` line."""
    sys.stderr.write(RENAMED)
    diff.run(job)


if __name__ == "__main__":
    sys.stderr.write(RENAMED)
    diff.main()
