"""The noise-floor table `results/noise_floor.csv`, read without torch: its columns and each host's floor.

`retrofit.measure.noise_floor` measures and writes it; the sweep's headline reads it
(`retrofit.runner.finish.noise_floors`) to mark a mean delta inside its host's floor.
"""

from pathlib import Path

import pandas as pd

from retrofit.errors import RetrofitError

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "host_digest": ("sha256, 16 hex", "digest of the host checkpoint file's bytes"),
    "source": ("label", "the change that should not matter: `input_ulp`, `threads` or `chunked`"),
    "cases": ("count", "dataset × seed cases measured"),
    "median_rel_pct": ("% of RMSE", "median movement 100 · |RMSE(changed) − RMSE| / RMSE over the cases"),
    "max_rel_pct": ("% of RMSE", "largest such movement (the host's floor: the largest over its sources)"),
}
"""Column -> (unit, meaning) of `results/noise_floor.csv` (one row per host x source)."""
COLUMNS = list(COLUMN_DOCS)
"""The columns of `results/noise_floor.csv`, in order."""


def read_floors(path: Path) -> dict[str, float]:
    """Host -> its noise floor in % of RMSE (comparable with `delta_rmse_pct`): the largest
    `max_rel_pct` over its sources in the table at `path`; RetrofitError naming the missing columns
    when it is not a noise-floor table."""
    table = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise RetrofitError(
            f"{path}: not a noise-floor table, missing columns {missing} (write it with noise_floor.py)"
        )
    return {str(host): float(pct) for host, pct in table.groupby("host", sort=False)["max_rel_pct"].max().items()}
