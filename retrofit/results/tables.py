"""The aggregation's tables: per-group statistics of unit records and their Markdown.

`summary` gives, per host × variant (× arm), the cases, mean ΔRMSE % with its bootstrap 95 % CI
(`retrofit.results.bootstrap`), the cases above / below zero, the signed largest ΔRMSE %, the
predict-time ratio and the mean distribution deltas with their CIs; `per_dataset` the baseline RMSE
and mean ΔRMSE % per host × dataset. `table_markdown` (retrofit_table.md), `arms_markdown`
(decomposition.md) and `headline` (printed at the end of a sweep; the README's table is rendered from the
record's files by `retrofit.results.figure_tables.headline`) render them.
Frames are `retrofit.results.record.frame_of` frames; nothing here reads a file or a registry.
"""

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from retrofit.results.bootstrap import N_BOOTSTRAP, frame_ci, mean_with_ci
from retrofit.results.record import SETTINGS

DISTRIBUTION_DELTAS = {
    "delta_nll": ("ΔNLL (nats)", 1.0),
    "delta_crps_pct": ("ΔCRPS (%)", 1.0),
    "delta_coverage_90": ("Δcoverage of the 90% interval (points)", 100.0),
}
"""The matched deltas of the whole predictive distribution -> (label with unit, scale from the CSV's
unit: `delta_coverage_90` is a fraction, shown in points)."""


def differing_settings(frame: pd.DataFrame) -> list[str]:
    """The `SETTINGS` columns whose value differs between rows of one host in `frame`."""
    present = [column for column in SETTINGS if column in frame]
    return [column for column in present if (frame.groupby("host")[column].nunique(dropna=False) > 1).any()]


def settings_apart(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each row's `host` label extended by the settings that differ within a host
    (`differing_settings`, e.g. `tiny_v3 (n_estimators=1)`), so that every table and plot keeps runs
    of different settings apart instead of pooling them into one mean."""
    columns = differing_settings(frame)
    if not columns:
        return frame
    settings = frame[columns].astype(str).apply(lambda row: ", ".join(f"{c}={v}" for c, v in row.items()), axis=1)
    return frame.assign(host=frame["host"] + " (" + settings + ")")


def settings_note(frame: pd.DataFrame) -> str:
    """One line saying which settings differ between rows of one host (kept apart), or ""."""
    columns = differing_settings(frame)
    if not columns:
        return ""
    return f"Rows differ in {', '.join(columns)}: kept apart (the host column names the setting), never pooled."


TIME_GOAL = 1.10
"""The predict-time ratio a retrofit aims to stay under; a ratio whose per-round range straddles it
is said to be within noise, neither met nor missed (`noise_mark`)."""


def time_ratio(group: pd.DataFrame) -> str:
    """Median predict-time ratio over the timed units of `group`, the range of their medians, the
    count, the timing settings and the mean load per core they ran under (`noise_mark`)."""
    ratios = group["predict_time_ratio"].dropna()
    if ratios.empty:
        return "not timed"
    text = f"{ratios.median():.2f}× [{ratios.min():.2f}, {ratios.max():.2f}] (n={len(ratios)}){timing_settings(group)}"
    return text + noise_mark(group)


def noise_mark(group: pd.DataFrame) -> str:
    """` within noise` when the per-round ratios of the timed units of `group` (their min and max)
    straddle `TIME_GOAL`, then the mean load per core the timings ran under (`load`), or ""."""
    timed = group[group["predict_time_ratio"].notna()]
    if timed.empty:
        return ""
    low, high = timed["predict_time_ratio_min"].min(), timed["predict_time_ratio_max"].max()
    spans = f" within noise (per-round ratios {low:.2f}–{high:.2f}, across {TIME_GOAL:.2f}×)"
    mark = spans if low <= TIME_GOAL <= high else ""
    load = timed["load"].mean() if "load" in timed else float("nan")
    return mark + (f" (load {load:.2f}/core)" if pd.notna(load) else "")


def timing_settings(group: pd.DataFrame) -> str:
    """The timing settings the timed units of `group` ran under, e.g. ` (3 rounds, 1 member)`;
    several when they differ."""
    if "timing_rounds" not in group:
        return ""
    timed = group[group["timing_rounds"] > 0]
    pairs = sorted(set(zip(timed["timing_rounds"], timed["timing_members"], strict=True)))
    return " (" + "; ".join(f"{r} rounds, {m} member{'s' if m != 1 else ''}" for r, m in pairs) + ")" if pairs else ""


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
    """The paper-style table of the main rows `frame` (see module docstring) as Markdown; rows of
    different settings kept apart (`settings_apart`)."""
    note, frame = settings_note(frame), settings_apart(frame)
    return "\n".join(
        [
            "# Retrofit RMSE: matched ΔRMSE% = 100 · (RMSE(variant) − RMSE(baseline)) / RMSE(baseline)",
            "",
            *([note, ""] if note else []),
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
    """The decomposition table of the arm rows `arms` as Markdown (settings kept apart)."""
    arms = settings_apart(arms)
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


def headline(
    frame: pd.DataFrame,
    floors: Mapping[tuple[str, str], float] | None = None,
    commands: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """The sweep's closing table for the hosts and variants in `frame` (main and arm rows): per variant (and
    arm other than the variant's own settings), per host, mean ΔRMSE % [95 % CI] (signed largest) and
    the predict-time ratio to the baseline. Rows of different settings are kept apart
    (`settings_apart`) and a line above the table says so. With `floors` ((host, device) -> noise
    floor in % of RMSE, the largest over its sources, `retrofit.runner.finish.noise_floors`), a mean
    |ΔRMSE| below its host's floor on the device its rows ran on is marked `≈0` and a line below the
    table gives each host's floor, or "floor not measured" and the command in `commands` that
    measures it."""
    note, frame = settings_note(frame), settings_apart(frame.assign(host_name=frame["host"]))
    names = dict(zip(frame["host"], zip(frame["host_name"], frame["device"], strict=True), strict=True))
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
            mean, floor = cases["delta_rmse_pct"].mean(), (floors or {}).get(names[host], math.nan)
            mark = " ≈0" if abs(mean) < floor else ""  # NaN (not measured) marks nothing
            line[f"{host} ΔRMSE % [95% CI] (largest)"] = (
                f"{mean:+.3f}{mark}{ci} ({largest(cases['delta_rmse_pct']):+.3f})"
            )
        line["time / baseline"] = ", ".join(
            f"{group.loc[group['host'] == h, 'predict_time_ratio'].median():.2f}×"
            + timing_settings(group[group["host"] == h])
            + noise_mark(group[group["host"] == h])
            for h in hosts
            if (group["host"] == h).any()
        ).replace("nan×", "not timed")
        table.append(line)
    text = _markdown(pd.DataFrame(table)) if table else "(no variant beyond the baseline ran)"
    if floors is not None:
        text += "\n\n" + floors_line(sorted(set(names.values())), floors, commands or {})
    return f"{note}\n\n{text}" if note else text


def floors_line(
    hosts: Sequence[tuple[str, str]], floors: Mapping[tuple[str, str], float], commands: Mapping[tuple[str, str], str]
) -> str:
    """Each (host, device)'s noise floor (the device named where it is not the CPU), or that it was
    not measured and the command in `commands` that measures it; and what `≈0` means."""

    def named(host: str, device: str) -> str:
        return host if device == "cpu" else f"{host} on {device}"

    said = [
        f"{named(*key)} {floors[key]:.2g} %"
        if key in floors
        else f"{named(*key)}: floor not measured" + (f" (measure it: {commands[key]})" if key in commands else "")
        for key in hosts
    ]
    return (
        f"Noise floor (how far the host's own stock RMSE moves under changes that should not matter): "
        f"{'; '.join(said)}. ≈0: a mean |ΔRMSE| within its host's floor."
    )
