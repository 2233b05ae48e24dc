"""Two retrofit_rmse.csv files compared unit by unit, printed (`configs/compare.yaml`, `make compare A=<csv> B=<csv>`):
per numeric column the largest |A − B| over the matched units and where, per host × variant the
mean ΔRMSE % in A and in B (`retrofit.results.reproduction`). Prints only; writes nothing.

    python experiments/compare.py a=outputs/results/retrofit_rmse.csv b=results/retrofit_rmse.csv
    python experiments/compare.py outputs/results/retrofit_rmse.csv results/retrofit_rmse.csv   # the same

Two bare file names (what `make compare` hands over) are taken as data, character for character:
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
class CompareConfig:
    """The schema of `configs/compare.yaml` (each key's role is written there)."""

    a: str = MISSING
    b: str = MISSING


SCHEMA = CompareConfig


def run(job: JobStart) -> None:
    """Print the comparison of the files `a` and `b` (relative paths: from where the command started)."""
    from retrofit.runner import resolve

    show(*(resolve(job.base_dir, path) for path in (job.settings.a, job.settings.b)))


def show(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Print the comparison of the files `a` and `b`; RetrofitError naming a file that is not a results table."""
    from retrofit.results.reproduction import compare

    print(f"A = {a}\nB = {b}\n")
    print(compare(a, b).text())


if __name__ == "__main__":
    given = sys.argv[1:]
    if len(given) == 2 and not any("=" in arg or arg.startswith("-") for arg in given):
        printable_output()
        with exit_on_user_error():
            show(*given)
    else:
        launch("compare")
