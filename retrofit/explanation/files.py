"""The files of an explanation, written alike by the explain job and `retrofit.explain(...,
out_dir=...)`: `<out_dir>/<name>_explanation.csv` (the frame, `retrofit.explanation.columns.COLUMNS`)
and `<name>_explanation.png` (a bar chart per row, `retrofit.results.explanation_plot`)."""

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.explanation.settings import ExplainSettings
from retrofit.io import write_csv
from retrofit.record_guard import check_record_outputs, writable_file
from retrofit.results.explanation_plot import plot_explanation


def explanation_files(out_dir: str | os.PathLike, name: str) -> tuple[Path, Path]:
    """The CSV and the PNG of the explanation of dataset `name` (a label) in `out_dir`."""
    return tuple(Path(out_dir) / f"{name}_explanation.{suffix}" for suffix in ("csv", "png"))


def checked_files(out_dir: str | os.PathLike, name: str) -> tuple[Path, Path]:
    """`explanation_files`, each checked writable and outside the committed results/ (RunnerError
    naming `out_dir`), before any work."""
    files = explanation_files(out_dir, name)
    for path in files:
        writable_file(path, "out_dir")
    check_record_outputs(files)
    return files


def write_explanation(
    frame: pd.DataFrame, files: Sequence[Path], name: str, host: Path, settings: ExplainSettings
) -> None:
    """Write `frame` (the explanation of dataset `name` on the checkpoint `host` with `settings`) to
    the CSV and the PNG of `files`, the figure titled with what ran."""
    how = "exact" if settings.budget is None else f"budget {settings.budget}"
    table_csv, figure = files
    write_csv(frame, table_csv)
    plot_explanation(frame, figure, f"{name} on {host.stem}: order {settings.order}, {how}")
