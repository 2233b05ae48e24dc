"""The noise-floor table `results/noise_floor.csv`, read without torch: its columns and each host's floor.

`retrofit.measure.noise_floor` measures and writes it; the sweep's headline reads it
(`retrofit.runner.finish.noise_floors`) to mark a mean delta inside its host's floor.
"""

from pathlib import Path

import pandas as pd

from retrofit.errors import RetrofitError

COLUMNS = ["host", "host_digest", "source", "cases", "median_rel_pct", "max_rel_pct"]
"""The columns of `results/noise_floor.csv` (one row per host x source)."""


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
