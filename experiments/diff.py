"""Two retrofit_rmse.csv files diffed unit by unit, printed (`configs/diff.yaml`, `make diff A=<csv> B=<csv>`):
per numeric column the largest |A − B| over the matched units and where, per host × variant the
mean ΔRMSE % in A and in B (`retrofit.results.reproduction`). Prints only; writes nothing.

    python experiments/diff.py a=outputs/results/retrofit_rmse.csv b=results/retrofit_rmse.csv
    python experiments/diff.py outputs/results/retrofit_rmse.csv results/retrofit_rmse.csv   # the same

Two bare file names (what `make diff` hands over) are taken as data, character for character:
they never pass through Hydra's override grammar, which would parse quotes, brackets and `${...}`
in them.
"""

import os
import sys
from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.errors import exit_on_user_error, printable_output
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart


@dataclass
class DiffConfig:
    """The schema of `configs/diff.yaml` (each key's role is written there)."""

    a: str = MISSING
    b: str = MISSING


SCHEMA = DiffConfig


def run(job: JobStart) -> None:
    """Print the diff of the files `a` and `b` (relative paths: from where the command started)."""
    from retrofit.runner import resolve

    show(*(resolve(job.base_dir, path) for path in (job.settings.a, job.settings.b)))


def show(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Print the diff of the files `a` and `b`; RetrofitError naming a file that is not a results table."""
    from retrofit.results.unit_diff import diff_units

    print(f"A = {a}\nB = {b}\n")
    print(diff_units(a, b).text())


def main() -> None:
    """The entry point: two bare file names are diffed as they are; any other command line is the job's."""
    given = sys.argv[1:]
    if len(given) == 2 and not any("=" in arg or arg.startswith("-") for arg in given):
        printable_output()
        with exit_on_user_error():
            show(*given)
    else:
        launch("diff")


if __name__ == "__main__":
    main()
