"""The suite's tables that docs/suite.md and README.md show (`make suite`, results/suite/), one
function per generated region (`retrofit.results.generated_docs.REGIONS`)."""

from pathlib import Path

import pandas as pd

from retrofit.results.figure_tables import markdown
from retrofit.results.render import percent
from retrofit.unit_key import variant_rank


def suite_summary(results: Path) -> str:
    """`suite/suite_summary.csv`: per half and model, the geometric-mean RMSE ratios (the forest's
    with its bootstrap interval), win rates, mean rank, the worst table against ridge, the goal."""
    frame = pd.read_csv(results / "suite" / "suite_summary.csv")
    rows = [
        [
            r.half.replace("_", "-"),
            f"`{r.model}`",
            r.tables,
            f"{r.over_random_forest:.3f} [{r.over_random_forest_low:.3f}, {r.over_random_forest_high:.3f}]",
            f"{r.over_best_ridge_gb:.3f}",
            f"{r.over_best:.3f}",
            " / ".join(f"{100 * w:.0f} %" for w in (r.wins_ridge, r.wins_random_forest, r.wins_gradient_boosting)),
            f"{r.mean_rank:.2f}",
            f"{r.worst_over_ridge:.3f} ({r.worst_table})",
            ("met" if r.meets_goal else "missed") if r.kind == "host" else "",
        ]
        for r in frame.itertuples()
    ]
    header = ["half", "model", "tables", "RMSE / RF (95% CI)", "/ best of ridge, GB", "/ best baseline"]
    return markdown([*header, "wins vs ridge / RF / GB", "mean rank", "worst / ridge (table)", "goal"], rows)


def suite_deltas(results: Path) -> str:
    """`suite/suite_deltas.csv`: per half, host and variant (in `retrofit.unit_key.VARIANT_ORDER`), the mean
    matched ΔRMSE with its interval, the largest case and the host's noise floor."""
    frame = pd.read_csv(results / "suite" / "suite_deltas.csv")
    halves = list(dict.fromkeys(frame["half"]))
    order = sorted(frame.itertuples(), key=lambda r: (halves.index(r.half), r.host, variant_rank(r.variant)))
    rows = [
        [
            r.half.replace("_", "-"),
            f"`{r.host}`",
            f"`{r.variant}`",
            r.cases,
            f"{percent(r.mean_delta_rmse_pct)} [{percent(r.ci_low)}, {percent(r.ci_high)}]",
            percent(r.largest_abs_delta_rmse_pct, signed=False),
            percent(r.noise_floor_pct, signed=False),
        ]
        for r in order
    ]
    header = ["half", "host", "variant", "cases", "mean ΔRMSE % [95% CI]", "largest \\|ΔRMSE\\| %", "floor %"]
    return markdown(header, rows)
