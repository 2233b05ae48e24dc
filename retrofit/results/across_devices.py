"""Every unit of a new run of the grid (e.g. on a GPU) against the same unit of the CPU record, judged
against each host's noise floor (`benchmarks.gpu_record`)."""

from collections.abc import Mapping

import pandas as pd

from retrofit.results.results_csv import keyed
from retrofit.results.unit_diff import TOLERANCES, Tolerances, agreement, compared_columns
from retrofit.unit_key import label

FLOOR_COLUMNS = {"rmse": "relative", "baseline_rmse": "relative", "delta_rmse_pct": "points"}
"""The columns a host's noise floor (% of its RMSE) speaks to: the RMSE levels by their relative
difference, ΔRMSE % by its difference in points."""


def across_devices(
    new: pd.DataFrame, reference: pd.DataFrame, floors: Mapping[str, float], tolerances: Tolerances = TOLERANCES
) -> pd.DataFrame:
    """Every unit of `new` (e.g. a GPU run of the grid) against the same unit of `reference` (the CPU
    record): one row per unit with its `host`, `unit` label, `verdict` and the `columns` that decide it.
    `equal`: every compared column (`compare`'s) within `tolerances` (1e-5 relative, the deltas'
    absolute slack besides); `within floor`: the columns
    that are not are all `FLOOR_COLUMNS` and each lies within the host's floor (`floors`: host ->
    % of RMSE); `differs`: otherwise (`columns` names the ones beyond); `only new` / `only reference`:
    a unit in one table only."""
    a_, b_ = keyed(new, "new"), keyed(reference, "reference")
    columns = sorted(compared_columns(a_) & compared_columns(b_))
    both = a_.index.intersection(b_.index)
    diff, rel, _, agree = agreement(a_, b_, both, columns, tolerances)
    rows = []
    for i, key in enumerate(both):
        floor = floors.get(key[0], 0.0)
        beyond = [c for j, c in enumerate(columns) if not agree[i, j]]
        size = {c: 100 * rel[i, j] if FLOOR_COLUMNS.get(c) == "relative" else diff[i, j] for j, c in enumerate(columns)}
        outside = [c for c in beyond if c not in FLOOR_COLUMNS or not size[c] <= floor]
        verdict = "equal" if not beyond else "differs" if outside else "within floor"
        rows.append(dict(host=key[0], unit=label(key), verdict=verdict, columns=", ".join(outside or beyond)))
    for side, keys in (("only new", a_.index.difference(b_.index)), ("only reference", b_.index.difference(a_.index))):
        rows += [dict(host=key[0], unit=label(key), verdict=side, columns="") for key in keys]
    return pd.DataFrame(rows, columns=["host", "unit", "verdict", "columns"])
