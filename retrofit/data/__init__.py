"""Datasets for the sweep: YAML spec → raw table → cleaned table → seeded, encoded split.

spec = DatasetSpec.from_mapping(cfg.dataset)
table = load_table(spec, base_dir)
case = split(table, seed, max_rows=spec.max_rows)
"""

from pathlib import Path

from retrofit.data.prepare import MIN_ROWS, Split, Table, clean, split
from retrofit.data.sources import SOURCES, load_frame
from retrofit.data.spec import DatasetSpec
from retrofit.errors import DatasetError


def load_table(spec: DatasetSpec, base_dir: Path) -> Table:
    """Load `spec` from its source and clean it (see `retrofit.data.prepare`)."""
    return clean(load_frame(spec, base_dir), spec)


__all__ = ["MIN_ROWS", "SOURCES", "DatasetError", "DatasetSpec", "Split", "Table", "clean", "load_table", "split"]
