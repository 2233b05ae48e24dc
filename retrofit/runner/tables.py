"""The aggregation's tables: per-group statistics of unit records and their Markdown.

`summary` gives, per host × variant (× arm), the cases, mean ΔRMSE % with its bootstrap 95 % CI
(`retrofit.runner.bootstrap`), the cases above / below zero, the signed largest ΔRMSE %, the
predict-time ratio and the mean distribution deltas with their CIs; `per_dataset` the baseline RMSE
and mean ΔRMSE % per host × dataset. `table_markdown` (retrofit_table.md), `arms_markdown`
(decomposition.md) and `headline` (the README's table, printed at the end of a sweep) render them.
Frames are `retrofit.runner.record.frame_of` frames; nothing here reads a file or a registry.
"""

from collections.abc import Sequence

import pandas as pd

from retrofit.runner.bootstrap import N_BOOTSTRAP, frame_ci, mean_with_ci

DISTRIBUTION_DELTAS = {
    "delta_nll": ("ΔNLL (nats)", 1.0),
    "delta_crps_pct": ("ΔCRPS (%)", 1.0),
    "delta_coverage_90": ("Δcoverage of the 90% interval (points)", 100.0),
}
"""The matched deltas of the whole predictive distribution -> (label with unit, scale from the CSV's
unit: `delta_coverage_90` is a fraction, shown in points)."""


def time_ratio(group: pd.DataFrame) -> str:
    """Median predict-time ratio over the timed units of `group`, the range of their medians, the count."""
    ratios = group["predict_time_ratio"].dropna()
    if ratios.empty:
        return "not timed"
    return f"{ratios.median():.2f}× [{ratios.min():.2f}, {ratios.max():.2f}] (n={len(ratios)})"


def largest(deltas: pd.Series) -> float:
    """The delta of largest magnitude, with its sign (−0.22 is an improvement, not a cost)."""
    return float(deltas.loc[deltas.abs().idxmax()])


def variant_label(frame: pd.DataFrame) -> pd.Series:
    """`variant`, with its hyper-parameter overrides appended when there are any."""
    return frame["variant"] + frame["hparams"].map(lambda h: f" ({h})" if h else "")


def summary(frame: pd.DataFrame, by: Sequence[str] = ("host", "variant")) -> pd.DataFrame:
    """Per group of `by` (variants with their overrides): cases, mean ΔRMSE % with its bootstrap
    95 % CI, cases above / below zero, the signed largest ΔRMSE %, the predict-time ratio and the
    mean distribution deltas with their CIs (`DISTRIBUTION_DELTAS`, in their units)."""
    rows = []
    labelled = frame.assign(variant=variant_label(frame))
    for keys, group in labelled.groupby(list(by), sort=False):
        low, high = frame_ci(group)
        delta = group["delta_rmse_pct"]
        settings = {"tau c": f"{group['tau_c'].iloc[0]:g}", "sink": group["eps_mode"].iloc[0]} if "arm" in by else {}
        rows.append(
            {
                **dict(zip(by, keys, strict=True)),
                **settings,
                "cases": len(group),
                "mean ΔRMSE %": f"{delta.mean():+.3f}",
                "95% CI": f"[{low:+.3f}, {high:+.3f}]" if len(group) > 1 else "n/a (1 case)",
                "cases > 0 / < 0": f"{(delta > 0).sum()} / {(delta < 0).sum()}",
                "largest ΔRMSE %": f"{largest(delta):+.3f}",
                "predict time / baseline": time_ratio(group),
                **{
                    f"mean {label} [95% CI]": mean_with_ci(group, col, scale)
                    for col, (label, scale) in DISTRIBUTION_DELTAS.items()
                },
            }
        )
    return pd.DataFrame(rows)


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """Per host × dataset: baseline RMSE and mean ΔRMSE % per variant (means over seeds)."""
    deltas = frame.assign(variant=variant_label(frame)).pivot_table(
        index=["host", "dataset"], columns="variant", values="delta_rmse_pct", aggfunc="mean"
    )
    deltas = deltas.map(lambda v: f"{v:+.3f}" if pd.notna(v) else "not run")  # e.g. closed variants on v2
    base = frame.groupby(["host", "dataset"]).agg({"baseline_rmse": "mean", "seed": "nunique"})
    base = base.rename(columns={"baseline_rmse": "baseline RMSE", "seed": "seeds"})
    base["baseline RMSE"] = base["baseline RMSE"].map(lambda v: f"{v:.4g}")
    return base.join(deltas).reset_index()


def _markdown(frame: pd.DataFrame) -> str:
    return frame.to_markdown(index=False, disable_numparse=True)


def _about(frame: pd.DataFrame) -> str:
    cases = len(frame[["host", "dataset", "seed"]].drop_duplicates())
    return (
        f"{cases} host × dataset × seed cases; 95% CI: two-level bootstrap, datasets then seeds within "
        f"({N_BOOTSTRAP} draws, percentile). Matched deltas against the baseline: ΔRMSE and ΔCRPS in %, ΔNLL in "
        "nats, Δcoverage of the central 90% interval in points (the CSV's `delta_coverage_90` is a fraction: "
        "1 point = 0.01). Largest: the case of largest |ΔRMSE|, signed."
    )


def table_markdown(frame: pd.DataFrame) -> str:
    """The paper-style table of the main rows `frame` (see module docstring) as Markdown."""
    return "\n".join(
        [
            "# Retrofit RMSE: matched ΔRMSE% = 100 · (RMSE(variant) − RMSE(baseline)) / RMSE(baseline)",
            "",
            _about(frame) + " Predict time / baseline: median of per-unit medians of interleaved, paired ratios "
            "(after a warm-up), [range of those medians], n timed units.",
            "",
            _markdown(summary(frame)),
            "",
            "## Per dataset (mean over seeds, ΔRMSE %)",
            "",
            _markdown(per_dataset(frame)),
            "",
        ]
    )


def arms_markdown(arms: pd.DataFrame) -> str:
    """The decomposition table of the arm rows `arms` as Markdown."""
    return "\n".join(
        [
            "# Retrofit cost: sink and presence effects",
            "",
            "Each arm runs the variant on the same fit as the baseline with the tau constant c and the sink mode "
            "shown: c as in the paper makes presences < 1, a tiny c makes every non-null presence 1 to rounding; "
            f"`absolute` is the paper's sink, `relative` a shift-invariant one. {_about(arms)}",
            "",
            _markdown(summary(arms, by=("host", "variant", "arm"))),
            "",
        ]
    )


def headline(frame: pd.DataFrame) -> str:
    """The README's table for the hosts and variants in `frame` (main and arm rows): per variant (and
    arm other than the variant's own settings), per host, mean ΔRMSE % [95 % CI] (signed largest) and
    the predict-time ratio to the baseline."""
    main = frame[~frame["arm_extra"] & (frame["variant"] != "baseline")]
    rows = [(variant_label(g).iloc[0], g) for _, g in main.groupby(variant_label(main), sort=False)]
    extras = frame[frame["arm_extra"]]
    rows += [(f"{v}, arm {a}", g) for (v, a), g in extras.groupby(["variant", "arm"], sort=False)]
    hosts = sorted(frame["host"].unique())
    table = []
    for label, group in rows:
        line = {"variant": label}
        for host in hosts:
            cases = group[group["host"] == host]
            if cases.empty:
                line[f"{host} ΔRMSE % [95% CI] (largest)"] = "not run"
                continue
            low, high = frame_ci(cases)
            ci = f" [{low:+.3f}, {high:+.3f}]" if len(cases) > 1 else ""
            line[f"{host} ΔRMSE % [95% CI] (largest)"] = (
                f"{cases['delta_rmse_pct'].mean():+.3f}{ci} ({largest(cases['delta_rmse_pct']):+.3f})"
            )
        line["time / baseline"] = ", ".join(
            f"{group.loc[group['host'] == h, 'predict_time_ratio'].median():.2f}×"
            for h in hosts
            if (group["host"] == h).any()
        ).replace("nan×", "not timed")
        table.append(line)
    return _markdown(pd.DataFrame(table)) if table else "(no variant beyond the baseline ran)"
