"""The noise-floor table `results/noise_floor.csv`, read without torch: its columns and each host's floor.

`benchmarks.floor_movements` measures it (`make noise-floor` into the record, `python -m retrofit
noise_floor` into `OWN_FLOORS`); the sweep's headline reads both (`retrofit.runner.finish.noise_floors`)
to mark a mean delta inside its host's floor on its device.
"""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.errors import RetrofitError
from retrofit.labels import DEVICE_DOC

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "host_digest": ("sha256, 16 hex", "digest of the host checkpoint file's bytes"),
    "device": DEVICE_DOC,
    "source": (
        "label",
        "the change that should not matter: `input_ulp`, `threads`, `chunked`, `precision`, `device` or `draw` "
        "(`benchmarks.floor_movements`)",
    ),
    "cases": ("count", "dataset × seed cases measured"),
    "median_rel_pct": ("% of RMSE", "median movement 100 · |RMSE(changed) − RMSE| / RMSE over the cases"),
    "max_rel_pct": (
        "% of RMSE",
        "largest such movement (the host's floor on a device: the largest over its sources, `precision` "
        "counted only for runs in tabpfn's own precision)",
    ),
}
"""Column -> (unit, meaning) of `results/noise_floor.csv` (one row per host x device x source)."""
COLUMNS = list(COLUMN_DOCS)
"""The columns of `results/noise_floor.csv`, in order."""
OWN_FLOORS = Path("outputs") / "noise_floor.csv"
"""Where `python -m retrofit noise_floor` writes by default (relative to where it starts): the floors
of a user's own hosts and datasets, which the sweep reads beside the record's."""


AUTOCAST_SOURCE = "precision"
"""The source that runs the host in tabpfn's own precision (autocast) instead of float32."""


def read_floors(path: Path, precision: str = "float32") -> dict[tuple[str, str], float]:
    """(host, device) -> the host's noise floor on that device in % of RMSE (comparable with
    `delta_rmse_pct` of a run in `precision`): the largest `max_rel_pct` over its sources in the table
    at `path`, `AUTOCAST_SOURCE` counted only for a run in tabpfn's own precision ("auto"; a float32
    run's numbers do not move with autocast's rounding). A table written before the `device` column
    was measured on the CPU (its rows are read as `cpu`). RetrofitError naming the missing columns
    when it is not a noise-floor table."""
    table = pd.read_csv(path)
    if "device" not in table.columns:
        table = table.assign(device="cpu")
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise RetrofitError(
            f"{path}: not a noise-floor table, missing columns {missing} (write it with noise_floor.py)"
        )
    if precision != "auto":
        table = table[table["source"] != AUTOCAST_SOURCE]
    floors = table.groupby(["host", "device"], sort=False)["max_rel_pct"].max()
    return {(str(host), str(device)): float(pct) for (host, device), pct in floors.items()}


def merged(new: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, int]:
    """`new` (rows in `COLUMNS`) with the rows of the table at `path` (if there is one) of every
    other host x device, and how many old rows were kept: measuring one host adds its rows to a
    table of others instead of replacing it."""
    if not Path(path).is_file():
        return new, 0
    read_floors(path)  # refuses a file that is not a noise-floor table
    old = pd.read_csv(path)
    old = old.assign(device="cpu") if "device" not in old.columns else old
    measured = set(zip(new["host"].astype(str), new["device"].astype(str), strict=True))
    kept = old[[(str(h), str(d)) not in measured for h, d in zip(old["host"], old["device"], strict=True)]]
    return pd.concat([kept[COLUMNS], new], ignore_index=True), len(kept)


def floor_command(host: str, device: str, datasets: Sequence[str], path: Path | str | None) -> str:
    """The command that measures the noise floor of `host` on `device` (a `device` column's label)
    on `datasets` into `OWN_FLOORS`, where the sweep reads it. `path`: None for a shipped host (an
    option of `configs/host/`), else its checkpoint file ("": not known here, the user names it)."""
    file = path or f"<{host}'s checkpoint file>"
    chosen = f"host={host}" if path is None else f"host=checkpoint host.name={host} host.path={file}"
    where = "cpu" if device == "cpu" else "cuda"
    return f"python -m retrofit noise_floor {chosen} datasets=[{','.join(datasets)}] device={where}"
