"""Aggregation, a pure step: unit records (`retrofit.results.record.UnitRecord`) → the files of a run.

It reads the records alone (no registry, no torch or tabpfn), so what a table shows is what the
rows say: `retrofit_rmse.csv` (every record, one row per unit), `retrofit_long.csv`, every row in
long format (`retrofit.results.long_format`), and `decomposition.csv` (the rows with an `arm`);
then the tables and plots those CSVs give (`write_tables`, also `make tables` on the committed ones):
the main units' (`arm_extra` false) `retrofit_table.{md,tex}`, `retrofit_per_dataset.{md,tex}`,
`retrofit_times.md` (`retrofit.results.pages`), `retrofit_deltas.png` and
`retrofit_distribution_deltas.png`, and the arms' `decomposition.{md,png}`. The hosts' noise floors,
where given, are a column of the main table and a shaded band of the ΔRMSE plots.
"""

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from retrofit.errors import RunnerError
from retrofit.io import locked, staged, write_csv, write_text_atomic
from retrofit.results.long_format import long_frame
from retrofit.results.pages import (
    ARMS_TABLE,
    PER_DATASET,
    PER_DATASET_TEX,
    TABLE,
    TABLE_TEX,
    TIMES_TABLE,
    Floors,
    arms_markdown,
    per_dataset_latex,
    per_dataset_markdown,
    table_latex,
    table_markdown,
    times_markdown,
)
from retrofit.results.plots import dots_with_ci
from retrofit.results.record import COLUMN_DOCS, COLUMNS, KEY, UnitRecord, frame_of, read_records
from retrofit.results.tables import (
    DISTRIBUTION_DELTAS,
    headline,
    host_floors,
    per_dataset,
    settings_apart,
    summary,
    variant_label,
)

__all__ = ["COLUMNS", "aggregate", "frame_of", "headline", "per_dataset", "summary", "table_markdown", "write_tables"]

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
CSV, LONG_CSV, DELTAS, DISTRIBUTION = (
    "retrofit_rmse.csv",
    "retrofit_long.csv",
    "retrofit_deltas.png",
    "retrofit_distribution_deltas.png",
)
ARMS_CSV, ARMS_PLOT = "decomposition.csv", "decomposition.png"
MAIN_TABLES = (TABLE, TABLE_TEX, PER_DATASET, PER_DATASET_TEX, TIMES_TABLE, DELTAS, DISTRIBUTION)
"""The files the main units give (`write_tables`), in order."""
LOCK = f".{CSV}.lock"
"""The lock file under `results_dir` that serialises its writers (ignored by git)."""
FILES = (CSV, LONG_CSV, *MAIN_TABLES, ARMS_CSV, ARMS_TABLE, ARMS_PLOT, "reproduction.txt", LOCK)
"""Every file a run may write under its `results_dir` (checked before any work: none may be a directory)."""
KEPT_APART = ["n_estimators", "device", "test_size", "precision", "threads", "host_digest", "data_digest"]
"""The columns (settings and input bytes) of a row that a row of the same unit key computed with
other values never replaces silently (`aggregate` with `keep`)."""


def outputs(frame: pd.DataFrame) -> list[str]:
    """The files `aggregate(..., table=True)` writes for `frame`, in order."""
    arms = frame[frame["arm"] != ""]
    return [CSV, LONG_CSV] + ([ARMS_CSV] if len(arms) else []) + table_outputs(frame, arms)


def table_outputs(frame: pd.DataFrame, arms: pd.DataFrame) -> list[str]:
    """The files `write_tables` writes for the records `frame` and the arm rows `arms`, in order."""
    main = frame[~frame["arm_extra"].astype(bool)]
    return (list(MAIN_TABLES) if len(main) else []) + ([ARMS_TABLE, ARMS_PLOT] if len(arms) else [])


def read_arms(path: Path) -> pd.DataFrame:
    """The arm rows of `decomposition.csv` at `path` as `write_files` wrote them (no rows when there is
    no such file: a sweep without arms); RunnerError naming the columns a file lacks."""
    if not Path(path).is_file():
        return pd.DataFrame(columns=ARM_COLUMNS)
    arms = pd.read_csv(path, dtype={name: str for name in ("host", "dataset", "variant", "arm", "eps_mode")})
    missing = [name for name in ARM_COLUMNS if name not in arms.columns]
    if missing:
        raise RunnerError(f"{path} lacks the columns {missing}; rewrite it with the sweep (experiments/aggregate.py)")
    return arms[ARM_COLUMNS]


def ordered_arms(frame: pd.DataFrame, records: Sequence[UnitRecord]) -> pd.DataFrame:
    """The arm rows of `frame` in `ARM_COLUMNS`, variants and arms in the order the records list them,
    then those of rows only `frame` holds (kept from an earlier run into the same results_dir)."""
    arms = frame[frame["arm"] != ""]
    variants = list(dict.fromkeys([*(r.variant for r in records if r.arm), *arms["variant"]]))
    names = list(dict.fromkeys([*(r.arm for r in records if r.arm), *arms["arm"]]))
    arms = arms.assign(
        variant=pd.Categorical(arms["variant"], variants, ordered=True),
        arm=pd.Categorical(arms["arm"], names, ordered=True),
    )
    arms = arms.drop_duplicates(["host", "dataset", "seed", "variant", "arm"])
    arms = arms.sort_values(["host", "variant", "arm", "dataset", "seed"], ignore_index=True)[ARM_COLUMNS]
    return arms.astype({"variant": str, "arm": str})


RMSE_PANEL = [("delta_rmse_pct", "ΔRMSE vs baseline (%)", 1.0)]
"""The one panel of the ΔRMSE plots."""


def plot_main(main: pd.DataFrame, results_dir: Path, floors: Floors = None) -> None:
    """`retrofit_deltas.png` and `retrofit_distribution_deltas.png` of the main rows `main`, the
    baseline (0 by definition) left out unless it ran alone; the ΔRMSE panels shade each host's noise
    floor (`floors`)."""
    bands = {(host, "delta_rmse_pct"): floor for host, floor in host_floors(main, floors or {}).items()}
    shown = settings_apart(main)
    variants = shown[shown["variant"] != "baseline"]
    groups = (variants if len(variants) else shown).assign(label=variant_label)  # the baseline if it ran alone
    title = "Matched RMSE change per case"
    dots_with_ci(groups, ["label"], RMSE_PANEL, title, Path(results_dir) / DELTAS, bands=bands)
    panels = [(col, label, scale) for col, (label, scale) in DISTRIBUTION_DELTAS.items()]
    title = "Matched change of the predictive distribution per case"
    dots_with_ci(groups, ["label"], panels, title, Path(results_dir) / DISTRIBUTION)


def plot_arms(arms: pd.DataFrame, results_dir: Path, floors: Mapping[str, float]) -> None:
    """`decomposition.png` of the arm rows `arms` (`ARM_COLUMNS`, in order): a panel per host and
    variant, an x position per arm named as in `decomposition.csv`, with its tau c and sink below;
    `floors` (host -> noise floor) shaded."""
    shown = settings_apart(arms)
    shown = shown.assign(arm=shown["arm"] + "\nc=" + shown["tau_c"].map("{:g}".format) + ", " + shown["eps_mode"])
    facets = set(zip(shown["host"], shown["variant"], strict=True))
    bands = {(f"{host} · {variant}", "delta_rmse_pct"): floors[host] for host, variant in facets if host in floors}
    title = "Retrofit cost by arm: presence × sink"
    path = Path(results_dir) / ARMS_PLOT
    dots_with_ci(shown, ["arm"], RMSE_PANEL, title, path, facets=("host", "variant"), bands=bands)


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
    results_dir: Path,
    records: Sequence[UnitRecord],
    *,
    table: bool = True,
    keep: bool = False,
    floors: Callable[[pd.DataFrame], Floors] | None = None,
) -> pd.DataFrame:
    """Write `retrofit_rmse.csv` of `records` (rows are accepted as `UnitRecord.from_row` reads them)
    and its long format `retrofit_long.csv` and, with `table`, the main table and plots and the
    decomposition files (`outputs`) under `results_dir`; return the frame. With `keep`, the rows
    already in the CSV stay (a unit in both counts once, as in `records`: runs accumulate), and
    one computed with other settings or inputs than this run's row of its unit is refused
    (`check_replaced`) rather than replaced. `floors` gives the hosts' noise floors the tables and
    plots show for the aggregated frame (none: shown as not given).
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
            write_files(frame, records, stage, table, floors(frame) if floors else None)
        return frame


def write_files(
    frame: pd.DataFrame, records: Sequence[UnitRecord], folder: Path, table: bool, floors: Floors = None
) -> None:
    """The files of `aggregate` for `frame` (from `records`) in `folder`: the CSVs, then with `table`
    the tables and plots (`write_tables`, with the hosts' noise `floors` where given)."""
    write_csv(frame, folder / CSV)
    write_csv(long_frame(frame), folder / LONG_CSV)
    arms = ordered_arms(frame, records)
    if len(arms):
        write_csv(arms, folder / ARMS_CSV)
    if table:
        write_tables(frame, arms, folder, floors)


def write_tables(frame: pd.DataFrame, arms: pd.DataFrame, folder: Path, floors: Floors = None) -> list[Path]:
    """The tables and plots of the records `frame` (`frame_of`'s columns) and of the arm rows `arms`
    (`decomposition.csv`'s) in `folder`, the hosts' noise floors `floors` shown where given; the
    paths written. Reads nothing: `make tables` hands it the committed CSVs."""
    folder = Path(folder)
    main = frame[~frame["arm_extra"].astype(bool)]
    for name, text in table_texts(frame, arms, floors).items():
        write_text_atomic(folder / name, text)
    if len(main):
        plot_main(main, folder, floors)
    if len(arms):
        plot_arms(arms, folder, host_floors(main, floors or {}))
    return [folder / name for name in table_outputs(frame, arms)]


def table_texts(frame: pd.DataFrame, arms: pd.DataFrame, floors: Floors = None) -> dict[str, str]:
    """File name -> text of each table file `write_tables` writes for `frame` and `arms`."""
    main = frame[~frame["arm_extra"].astype(bool)]
    texts = {}
    if len(main):
        texts |= {
            TABLE: table_markdown(main, floors),
            TABLE_TEX: table_latex(main, floors),
            PER_DATASET: per_dataset_markdown(main),
            PER_DATASET_TEX: per_dataset_latex(main),
            TIMES_TABLE: times_markdown(main),
        }
    return texts | ({ARMS_TABLE: arms_markdown(arms)} if len(arms) else {})
