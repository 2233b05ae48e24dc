"""The sweep in long format, as leaderboard tools such as TabArena read it: one row per method ×
dataset × fold (the seed) × metric, with the error (lower is better), the matched stock host's
error and the train and predict seconds. Written beside `retrofit_rmse.csv` by the aggregation."""

import pandas as pd

from retrofit.results.record import COLUMN_DOCS as RECORD_DOCS
from retrofit.results.tables import settings_apart, variant_label

METRICS = {"rmse": "baseline_rmse", "nll": "baseline_nll", "crps": "baseline_crps"}
"""Each error metric of a unit (a `retrofit_rmse.csv` column) -> the stock host's value of it."""
COLUMN_DOCS = {
    "method": ("label", "`<host>/<variant>` with the unit's overrides, `(k=v,...)`, and any setting that differs"),
    "dataset": RECORD_DOCS["dataset"],
    "fold": ("integer", "the case's seed (split and `random_state`)"),
    "metric": ("label", "`rmse` (target units), `nll` (nats) or `crps` (target units)"),
    "metric_error": ("the metric's unit", "the method's value of `metric` on the test rows; lower is better"),
    "baseline_error": ("the metric's unit", "the stock host's value of `metric` on the same split (matched)"),
    "time_train_s": ("s", "wall seconds of the stock host's fit (`fit_seconds`; a retrofit refits nothing)"),
    "time_infer_s": ("s", "median wall seconds of one predict call on the test rows (NaN untimed)"),
    "problem_type": ("label", "`regression`"),
    "host": RECORD_DOCS["host"],
    "variant": RECORD_DOCS["variant"],
    "hparams": RECORD_DOCS["hparams"],
    "arm": RECORD_DOCS["arm"],
    "n_estimators": RECORD_DOCS["n_estimators"],
    "host_digest": RECORD_DOCS["host_digest"],
    "tabpfn_version": RECORD_DOCS["tabpfn_version"],
    "commit": RECORD_DOCS["commit"],
}
"""Column -> (unit, meaning) of `retrofit_long.csv`, in order (shared columns as the record's)."""
SHARED = ["dataset", "host", "variant", "hparams", "arm", "n_estimators", "host_digest", "tabpfn_version", "commit"]
"""The columns taken from the unit's row unchanged."""


def long_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (rows of `retrofit_rmse.csv`) in long format (`COLUMN_DOCS`), one row per unit ×
    `METRICS`, in the order of `frame` then `METRICS`."""
    apart = settings_apart(frame)
    units = frame.assign(
        method=apart["host"] + "/" + variant_label(frame),
        fold=frame["seed"],
        time_train_s=frame["fit_seconds"],
        time_infer_s=frame["predict_seconds"],
        problem_type="regression",
    )
    per_metric = [
        units.assign(metric=metric, metric_error=units[metric], baseline_error=units[baseline], _order=i)
        for i, (metric, baseline) in enumerate(METRICS.items())
    ]
    stacked = pd.concat(per_metric).rename_axis("_unit").sort_values(["_unit", "_order"], kind="stable")
    return stacked.reset_index(drop=True)[list(COLUMN_DOCS)]
