"""The suite: real regression tables, split once into a development half and a held-out half, the
shipped hosts against ridge, a random forest and gradient boosting on each table × seed.

`configs/suite_tables/default.yaml` lists both halves, drawn once by `split_halves` (a test checks
the committed lists are that draw); the rule that chose the tables is in docs/suite.md. Anything
tuned (the prior, the curriculum, training length, a preset) looks at the development half only.

The hosts' RMSEs are the sweep's stock units (`+experiment=suite`, variant `baseline`); the
baselines (`benchmarks.host_baselines.BASELINES`) are fitted here on the same split, which
`check_matched` confirms row count by row count. Ratios are per table the geometric mean over
seeds of RMSE(model) / RMSE(baseline); summaries are geometric means over tables with a
percentile bootstrap over tables (`scipy.stats.bootstrap`).
"""

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import bootstrap

from retrofit.errors import RunnerError

SPLIT_SEED = 0
"""The seed of the one draw that split the suite into its halves."""
COMPARED = ("ridge", "random_forest", "gradient_boosting")
"""The baselines every model is measured against (the mean predictor is scored, not compared)."""
REFERENCES = {**{name: (name,) for name in COMPARED}, "best": COMPARED, "best_ridge_gb": ("ridge", "gradient_boosting")}
"""Reference name -> the baselines it takes the best of, per table (lowest geometric-mean RMSE)."""
GOALS = {"random_forest": 0.95, "best_ridge_gb": 0.97}
"""A host's goal on the held-out half: geometric-mean ratio at most this, per reference."""
WORST_OVER_RIDGE_GOAL = 1.10
"""... and no table's ratio to ridge above this."""
HALVES = ("development", "held_out")

SCORE_DOCS = {
    "dataset": ("label", "suite table"),
    "seed": ("integer", "split and `random_state` seed"),
    "model": ("label", "a shipped host (its stock RMSE from the suite's sweep) or a baseline of `BASELINES`"),
    "rmse": ("target units", "root mean squared error on the test rows"),
    "n_train": ("rows", "training rows of the split"),
    "n_test": ("rows", "test rows of the split"),
    "half": ("label", "`development` (what tuning may look at) or `held_out`"),
}
"""Column -> (unit, meaning) of `suite_scores.csv` (the long format: one row per table × seed × model)."""
TABLE_DOCS = {
    "dataset": ("label", "suite table"),
    "half": SCORE_DOCS["half"],
    "model": ("label", "a shipped host or a baseline"),
    "kind": ("label", "`host` or `baseline`"),
    "seeds": ("count", "seeds the ratios are taken over"),
    "rmse": ("target units", "geometric mean over seeds of the test RMSE"),
    **{
        f"over_{ref}": ("ratio", f"geometric mean over seeds of RMSE / {_doc}'s")
        for ref, _doc in (
            ("ridge", "ridge"),
            ("random_forest", "the random forest"),
            ("gradient_boosting", "gradient boosting"),
            ("best", "the table's best baseline"),
            ("best_ridge_gb", "the better of ridge and gradient boosting on the table"),
        )
    },
    "over_best_min": ("ratio", "smallest over seeds of RMSE / the best baseline's"),
    "over_best_max": ("ratio", "largest over seeds of RMSE / the best baseline's"),
    "best_baseline": ("label", "the table's best baseline"),
    "rank": ("rank", "1 = lowest RMSE among the hosts and the compared baselines on the table"),
}
"""Column -> (unit, meaning) of `suite_tables.csv` (`per_table`)."""
SUMMARY_DOCS = {
    "half": ("label", "`development`, `held_out` or `all`"),
    "model": TABLE_DOCS["model"],
    "kind": TABLE_DOCS["kind"],
    "tables": ("count", "tables summarised"),
    **{
        column: (unit, f"{meaning}, geometric mean over tables")
        for column, (unit, meaning) in TABLE_DOCS.items()
        if column.startswith("over_") and not column.startswith("over_best_m")
    },
    **{
        f"over_{ref}_{end}": ("ratio", f"{end} of the 95% bootstrap interval (over tables) of over_{ref}")
        for ref in ("random_forest", "best", "best_ridge_gb")
        for end in ("low", "high")
    },
    **{f"wins_{name}": ("fraction", f"share of tables where the model's RMSE is below {name}'s") for name in COMPARED},
    "mean_rank": ("rank", "mean over tables of `rank`"),
    "worst_over_ridge": ("ratio", "largest over tables of over_ridge"),
    "worst_table": ("label", "the table where it is largest"),
    "meets_goal": ("flag", "a host: over_random_forest ≤ 0.95, over_best_ridge_gb ≤ 0.97, worst_over_ridge ≤ 1.10"),
}
"""Column -> (unit, meaning) of `suite_summary.csv` (`summarise`)."""
DELTA_DOCS = {
    "half": SUMMARY_DOCS["half"],
    "host": ("label", "shipped host"),
    "variant": ("label", "retrofit variant (every one the host runs)"),
    "tables": ("count", "tables"),
    "cases": ("count", "table × seed cases"),
    "mean_delta_rmse_pct": ("%", "mean over tables of the per-table mean matched ΔRMSE"),
    "ci_low": ("%", "low end of its 95% bootstrap interval over tables"),
    "ci_high": ("%", "high end of it"),
    "largest_abs_delta_rmse_pct": ("%", "largest |matched ΔRMSE| of a case"),
    "noise_floor_pct": ("%", "the host's noise floor (results/noise_floor.csv; NaN: not measured)"),
    "within_floor": ("flag", "|mean_delta_rmse_pct| below the noise floor"),
}
"""Column -> (unit, meaning) of `suite_deltas.csv` (`delta_summary`)."""


def split_halves(names: Sequence[str], seed: int = SPLIT_SEED) -> tuple[list[str], list[str]]:
    """`(development, held_out)`: the sorted `names` in a seeded random order, the first ceil(n/2)
    to development, the rest held out; each half sorted."""
    ordered = sorted(names)
    order = np.random.default_rng(seed).permutation(len(ordered))
    cut = -(-len(ordered) // 2)
    return sorted(ordered[i] for i in order[:cut]), sorted(ordered[i] for i in order[cut:])


def host_scores(sweep: pd.DataFrame, halves: Mapping[str, str], seeds: Sequence[int]) -> pd.DataFrame:
    """The hosts' stock RMSE rows (`dataset, seed, model, rmse, n_train, n_test`) of the sweep's
    records; RunnerError naming the first host × table × seed of the suite the sweep lacks."""
    stock = sweep[sweep["variant"] == "baseline"]
    for host in sorted(stock["host"].unique()):
        own = stock[stock["host"] == host]
        have = set(zip(own["dataset"], own["seed"], strict=True))
        missing = [(d, s) for d in halves for s in seeds if (d, s) not in have]
        if missing:
            raise RunnerError(
                f"the suite's sweep holds no {host} case for {missing[0][0]} seed {missing[0][1]} "
                f"({len(missing)} missing); run it first: make suite"
            )
    stock = stock[stock["dataset"].isin(list(halves)) & stock["seed"].isin(list(seeds))]
    return stock.rename(columns={"host": "model"})[["dataset", "seed", "model", "rmse", "n_train", "n_test"]]


def check_matched(scores: pd.DataFrame) -> None:
    """RunnerError unless every model of a table × seed saw the same number of train and test rows."""
    sizes = scores.groupby(["dataset", "seed"])[["n_train", "n_test"]].nunique()
    apart = sizes[(sizes > 1).any(axis=1)]
    if len(apart):
        dataset, seed = apart.index[0]
        raise RunnerError(
            f"{dataset} seed {seed}: the hosts and the baselines were scored on different splits; "
            "re-run the suite's sweep with the suite's own settings (make suite)"
        )


def per_table(scores: pd.DataFrame, halves: Mapping[str, str]) -> pd.DataFrame:
    """One row per table × model (`TABLE_DOCS`), from `scores` (`dataset, seed, model, rmse` rows)."""
    wide = scores.pivot_table(index=["dataset", "seed"], columns="model", values="rmse")
    log_wide = np.log(wide)
    table_log = log_wide.groupby(level="dataset").mean()
    best_of = {ref: table_log[list(names)].idxmin(axis=1) for ref, names in REFERENCES.items()}
    compared = [m for m in wide.columns if m != "mean"]
    ranks = table_log[compared].rank(axis=1)
    rows = []
    for dataset, frame in log_wide.groupby(level="dataset"):
        for model in compared:
            ratios = {ref: frame[model] - frame[best_of[ref][dataset]] for ref in REFERENCES}
            rows.append(
                {
                    "dataset": dataset,
                    "half": halves[dataset],
                    "model": model,
                    "kind": "baseline" if model in COMPARED else "host",
                    "seeds": len(frame),
                    "rmse": float(np.exp(frame[model].mean())),
                    **{f"over_{ref}": float(np.exp(r.mean())) for ref, r in ratios.items()},
                    "over_best_min": float(np.exp(ratios["best"].min())),
                    "over_best_max": float(np.exp(ratios["best"].max())),
                    "best_baseline": best_of["best"][dataset],
                    "rank": float(ranks.loc[dataset, model]),
                }
            )
    return pd.DataFrame(rows)


def _geomean_ci(ratios: np.ndarray, n_boot: int, seed: int) -> tuple[float, float, float]:
    """Geometric mean of `ratios` and its 95% percentile-bootstrap interval over the entries."""
    logs = np.log(ratios)
    if len(logs) < 2 or np.ptp(logs) == 0:
        value = float(np.exp(logs.mean()))
        return value, value, value
    ci = bootstrap((logs,), np.mean, n_resamples=n_boot, method="percentile", random_state=seed).confidence_interval
    return float(np.exp(logs.mean())), float(np.exp(ci.low)), float(np.exp(ci.high))


def summarise(tables: pd.DataFrame, n_boot: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per half (and `all`) × model (`SUMMARY_DOCS`) from `per_table`'s rows."""
    rows = []
    for half in (*HALVES, "all"):
        part = tables if half == "all" else tables[tables["half"] == half]
        for model, frame in part.groupby("model", sort=False):
            row = {"half": half, "model": model, "kind": frame["kind"].iloc[0], "tables": len(frame)}
            for ref in REFERENCES:
                value, low, high = _geomean_ci(frame[f"over_{ref}"].to_numpy(), n_boot, seed)
                row[f"over_{ref}"] = value
                if f"over_{ref}_low" in SUMMARY_DOCS:
                    row[f"over_{ref}_low"], row[f"over_{ref}_high"] = low, high
            for name in COMPARED:
                row[f"wins_{name}"] = float((frame[f"over_{name}"] < 1).mean())
            worst = frame.loc[frame["over_ridge"].idxmax()]
            row |= {"mean_rank": frame["rank"].mean(), "worst_over_ridge": worst["over_ridge"]}
            row["worst_table"] = worst["dataset"]
            row["meets_goal"] = bool(
                row["kind"] == "host"
                and all(row[f"over_{ref}"] <= goal for ref, goal in GOALS.items())
                and row["worst_over_ridge"] <= WORST_OVER_RIDGE_GOAL
            )
            rows.append(row)
    return pd.DataFrame(rows, columns=list(SUMMARY_DOCS))


def delta_summary(
    sweep: pd.DataFrame,
    halves: Mapping[str, str],
    floors: Mapping[str, float],
    n_boot: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per half (and `all`) × host × variant (`DELTA_DOCS`): the matched ΔRMSE of the
    sweep's variant units on the suite's tables, with the host's noise floor (`floors`: host -> %)."""
    units = sweep[(sweep["variant"] != "baseline") & sweep["dataset"].isin(list(halves))]
    units = units.assign(half=units["dataset"].map(halves))
    rows = []
    for half in (*HALVES, "all"):
        part = units if half == "all" else units[units["half"] == half]
        for (host, variant), frame in part.groupby(["host", "variant"]):
            per_table_mean = frame.groupby("dataset")["delta_rmse_pct"].mean().to_numpy()
            mean = float(per_table_mean.mean())
            low, high = mean, mean
            if len(per_table_mean) > 1 and np.ptp(per_table_mean) > 0:
                ci = bootstrap((per_table_mean,), np.mean, n_resamples=n_boot, method="percentile", random_state=seed)
                low, high = float(ci.confidence_interval.low), float(ci.confidence_interval.high)
            floor = floors.get(host, float("nan"))
            rows.append(
                {
                    "half": half,
                    "host": host,
                    "variant": variant,
                    "tables": len(per_table_mean),
                    "cases": len(frame),
                    "mean_delta_rmse_pct": mean,
                    "ci_low": low,
                    "ci_high": high,
                    "largest_abs_delta_rmse_pct": float(frame["delta_rmse_pct"].abs().max()),
                    "noise_floor_pct": floor,
                    "within_floor": bool(abs(mean) < floor),
                }
            )
    return pd.DataFrame(rows, columns=list(DELTA_DOCS))
