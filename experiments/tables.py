"""A sweep's tables and plots re-rendered from its CSVs, nothing rerun (`configs/tables.yaml`, `make tables`):
`retrofit_rmse.csv` and `decomposition.csv` of `results_dir` with each host's noise floor from
`noise_floors` -> the tables (Markdown and LaTeX) and plots beside them
(`retrofit.results.run_files.write_tables`, what a sweep writes at its end).

    python experiments/tables.py                              # the committed results/ (make tables)
    python experiments/tables.py results_dir=outputs/quick    # a sweep's own folder
"""

from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart


@dataclass
class TablesConfig:
    """The schema of `configs/tables.yaml` (each key's role is written there)."""

    results_dir: str = MISSING
    noise_floors: str = MISSING


SCHEMA = TablesConfig


def run(job: JobStart) -> None:
    """Read the folder's CSVs and the floors, check where the files go, write them and name each."""
    from retrofit.io import staged
    from retrofit.results.record import frame_of, read_records
    from retrofit.results.run_files import ARMS_CSV, CSV, read_arms, table_outputs, write_tables
    from retrofit.runner import resolve
    from retrofit.runner.finish import frame_floors

    folder = resolve(job.base_dir, job.settings.results_dir)
    frame = frame_of(read_records(folder / CSV))
    arms = read_arms(folder / ARMS_CSV)
    job.outputs(*(folder / name for name in table_outputs(frame, arms)))  # the record only under make tables
    floors = frame_floors(frame, resolve(job.base_dir, job.settings.noise_floors))  # as the sweep reads them
    with staged(folder) as stage:  # every file of this write, or none
        names = [path.name for path in write_tables(frame, arms, stage, floors)]
    for name in names:
        print(f"wrote {folder / name}")


if __name__ == "__main__":
    launch("tables")
