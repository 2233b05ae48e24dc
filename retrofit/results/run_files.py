"""Aggregation, a pure step: unit records (`retrofit.results.record.UnitRecord`) → the files of a run.

It reads the records alone (no registry, no torch or tabpfn), so what a table shows is what the
rows say: `retrofit_rmse.csv` (every record, one row per unit), `retrofit_table.md` and its plots
`retrofit_deltas.png`, `retrofit_distribution_deltas.png` (the main units, `arm_extra` false;
statistics and Markdown: `retrofit.results.tables`), `decomposition.{csv,md,png}` (the rows
with an `arm`), and `retrofit_long.csv`, every row in long format (`retrofit.results.long_format`).
"""

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import locked, staged, write_csv, write_text_atomic
from retrofit.results.long_format import long_frame
from retrofit.results.plots import dots_with_ci
from retrofit.results.record import COLUMN_DOCS, COLUMNS, KEY, UnitRecord, frame_of, read_records
from retrofit.results.tables import (
    DISTRIBUTION_DELTAS,
    arms_markdown,
    headline,
    per_dataset,
    settings_apart,
    summary,
    table_markdown,
    variant_label,
)

__all__ = ["COLUMNS", "aggregate", "frame_of", "headline", "per_dataset", "summary", "table_markdown"]

ARM_COLUMNS = [
    "host",
    "dataset",
    "seed",
    "variant",
    "arm",
    "tau_c",
    "eps_den",
    "eps_mode",
    "rmse",
    "baseline_rmse",
    "delta_rmse_pct",
    "delta_nll",
    "delta_crps_pct",
    "delta_coverage_90",
]
"""The columns of `decomposition.csv`."""
ARM_DOCS = {name: COLUMN_DOCS[name] for name in ARM_COLUMNS}
"""Column -> (unit, meaning) of `decomposition.csv`: those of `retrofit_rmse.csv`."""
CSV, LONG_CSV, TABLE, DELTAS, DISTRIBUTION = (
    "retrofit_rmse.csv",
    "retrofit_long.csv",
    "retrofit_table.md",
    "retrofit_deltas.png",
    "retrofit_distribution_deltas.png",
)
ARMS_CSV, ARMS_TABLE, ARMS_PLOT = "decomposition.csv", "decomposition.md", "decomposition.png"
LOCK = f".{CSV}.lock"
"""The lock file under `results_dir` that serialises its writers (ignored by git)."""
FILES = (CSV, LONG_CSV, TABLE, DELTAS, DISTRIBUTION, ARMS_CSV, ARMS_TABLE, ARMS_PLOT, "reproduction.txt", LOCK)
"""Every file a run may write under its `results_dir` (checked before any work: none may be a directory)."""
KEPT_APART = ["n_estimators", "device", "test_size", "precision", "threads", "host_digest", "data_digest"]
"""The columns (settings and input bytes) of a row that a row of the same unit key computed with
other values never replaces silently (`aggregate` with `keep`)."""


def outputs(frame: pd.DataFrame) -> list[str]:
    """The files `aggregate(..., table=True)` writes for `frame`, in order."""
    main = frame[~frame["arm_extra"]]
    arms = frame[frame["arm"] != ""]
    return (
        [CSV, LONG_CSV]
        + ([TABLE, DELTAS, DISTRIBUTION] if len(main) else [])
        + ([ARMS_CSV, ARMS_TABLE, ARMS_PLOT] if len(arms) else [])
    )


def ordered_arms(frame: pd.DataFrame, records: Sequence[UnitRecord]) -> pd.DataFrame:
    """The arm rows of `frame` in `ARM_COLUMNS`, variants and arms in the order the records list them."""
    arms = frame[frame["arm"] != ""]
    variants = list(dict.fromkeys(r.variant for r in records if r.arm))
    names = list(dict.fromkeys(r.arm for r in records if r.arm))
    arms = arms.assign(
        variant=pd.Categorical(arms["variant"], variants, ordered=True),
        arm=pd.Categorical(arms["arm"], names, ordered=True),
    )
    arms = arms.drop_duplicates(["host", "dataset", "seed", "variant", "arm"])
    arms = arms.sort_values(["host", "variant", "arm", "dataset", "seed"], ignore_index=True)[ARM_COLUMNS]
    return arms.astype({"variant": str, "arm": str})


def plot_main(main: pd.DataFrame, results_dir: Path) -> None:
    """`retrofit_deltas.png` and `retrofit_distribution_deltas.png` of the main rows `main`."""
    main = settings_apart(main)
    groups = main.assign(label=variant_label(main))
    rmse_panel = [("delta_rmse_pct", "ΔRMSE vs baseline (%)", 1.0)]
    dots_with_ci(groups, ["label"], rmse_panel, "Matched RMSE change per case", Path(results_dir) / DELTAS)
    panels = [(col, label, scale) for col, (label, scale) in DISTRIBUTION_DELTAS.items()]
    title = "Matched change of the predictive distribution per case"
    dots_with_ci(groups, ["label"], panels, title, Path(results_dir) / DISTRIBUTION)


def plot_arms(arms: pd.DataFrame, results_dir: Path) -> None:
    """`decomposition.png` of the arm rows `arms` (`ARM_COLUMNS`, in order): a panel per host and
    variant, an x position per arm."""
    rmse_panel = [("delta_rmse_pct", "ΔRMSE vs baseline (%)", 1.0)]
    title = "Retrofit cost by arm: presence × sink"
    path = Path(results_dir) / ARMS_PLOT
    dots_with_ci(settings_apart(arms), ["arm"], rmse_panel, title, path, facets=("host", "variant"))


def check_replaced(kept: Sequence[UnitRecord], records: Sequence[UnitRecord], csv: Path) -> None:
    """RunnerError naming the rows of `kept` (in `csv`) that a record of `records` with the same unit
    key would replace although it differs in a `KEPT_APART` column, and how."""
    new = {_key(r): r for r in records}
    replaced = [(old, new[_key(old)]) for old in kept if _key(old) in new and _apart(old) != _apart(new[_key(old)])]
    if replaced:
        old, row = replaced[0]
        changes = ", ".join(
            f"{name} {getattr(old, name)} -> {getattr(row, name)}"
            for name, before, after in zip(KEPT_APART, _apart(old), _apart(row), strict=True)
            if before != after
        )
        raise RunnerError(
            f"{csv} holds {len(replaced)} rows this run would replace by rows of other settings, e.g. "
            f"{old.host}/{old.dataset}/seed={old.seed}/{old.variant} ({changes}); write to another results_dir "
            "(the units are stored: a rerun reuses them) or remove those rows"
        )


def _key(record: UnitRecord) -> tuple:
    return tuple(getattr(record, name) for name in KEY)


def _apart(record: UnitRecord) -> tuple:
    values = (getattr(record, name) for name in KEPT_APART)
    return tuple(None if isinstance(v, float) and math.isnan(v) else v for v in values)


def aggregate(
    results_dir: Path, records: Sequence[UnitRecord], *, table: bool = True, keep: bool = False
) -> pd.DataFrame:
    """Write `retrofit_rmse.csv` of `records` (rows are accepted as `UnitRecord.from_row` reads them)
    and its long format `retrofit_long.csv` and, with `table`, the main table and plots and the
    decomposition files (`outputs`) under `results_dir`; return the frame. With `keep`, the rows
    already in the CSV stay (a unit in both counts once, as in `records`: runs accumulate), and
    one computed with other settings or inputs than this run's row of its unit is refused
    (`check_replaced`) rather than replaced.
    Read and write happen under one lock on `results_dir` (`filelock`), so concurrent writers never
    lose each other's rows; the files are written together (`retrofit.io.staged`): a write that
    fails (a full disk) changes none of them."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    with locked(results_dir / LOCK, str(results_dir / CSV)):
        records = [r if isinstance(r, UnitRecord) else UnitRecord.from_row(r) for r in records]
        kept = read_records(results_dir / CSV) if keep and (results_dir / CSV).is_file() else []
        check_replaced(kept, records, results_dir / CSV)
        frame = frame_of([*kept, *records])
        with staged(results_dir) as stage:  # all files of this write, or none (a full disk)
            write_files(frame, records, stage, table)
        return frame


def write_files(frame: pd.DataFrame, records: Sequence[UnitRecord], folder: Path, table: bool) -> None:
    """The files of `aggregate` for `frame` (from `records`) in `folder`."""
    write_csv(frame, folder / CSV)
    write_csv(long_frame(frame), folder / LONG_CSV)
    if not table:
        return
    main = frame[~frame["arm_extra"]]
    if len(main):
        write_text_atomic(folder / TABLE, table_markdown(main))
        plot_main(main, folder)
    arms = ordered_arms(frame, records)
    if len(arms):
        write_csv(arms, folder / ARMS_CSV)
        untimed = arms.assign(predict_time_ratio=float("nan"), hparams="")
        write_text_atomic(folder / ARMS_TABLE, arms_markdown(untimed))
        plot_arms(arms, folder)
