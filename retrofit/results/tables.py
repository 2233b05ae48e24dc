"""The aggregation's tables: per-group statistics of unit records as frames of text cells.

`summary` gives, per host × variant (× arm), the cases, mean ΔRMSE % with its bootstrap 95 % CI
(`retrofit.results.bootstrap`), the host's noise floor and whether the mean lies within it, the
cases above / below zero and the signed largest ΔRMSE %; `distribution` the mean distribution
deltas with their CIs; `per_dataset` the baseline RMSE and each variant's ΔRMSE % per host × dataset,
mean ± sd over the seeds. `headline` is the table printed at the end of a sweep (the README's is
rendered from the record's files by `retrofit.results.figure_tables.headline`); the predict-time
ratios are `retrofit.results.times`', the files' text `retrofit.results.pages`'.
Frames are `retrofit.results.record.frame_of` frames; nothing here reads a file or a registry.
"""

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from retrofit.results.bootstrap import frame_ci, mean_with_ci
from retrofit.results.record import SETTINGS
from retrofit.results.render import markdown, percent
from retrofit.results.times import noise_mark, timing_settings
from retrofit.unit_key import variant_rank

DISTRIBUTION_DELTAS = {
    "delta_nll": ("ΔNLL (nats)", 1.0),
    "delta_crps_pct": ("ΔCRPS (%)", 1.0),
    "delta_coverage_90": ("Δcoverage 90% (points)", 100.0),
}
"""The matched deltas of the whole predictive distribution -> (label with unit, scale from the CSV's
unit: `delta_coverage_90`, the change of the share of targets inside the central 90 % interval, is a
fraction, shown in points)."""


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


def largest(deltas: pd.Series) -> float:
    """The delta of largest magnitude, with its sign (−0.22 is an improvement, not a cost)."""
    return float(deltas.loc[deltas.abs().idxmax()])


def in_variant_order(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s rows by host and, within one, by variant in `retrofit.unit_key.VARIANT_ORDER` (rows of
    one variant in their order): the order of every table and plot."""
    ranks = frame["variant"].map(variant_rank)
    order = sorted(range(len(frame)), key=lambda i: (frame["host"].iloc[i], ranks.iloc[i]))
    return frame.iloc[order]


def variant_label(frame: pd.DataFrame) -> pd.Series:
    """`variant`, with its hyper-parameter overrides appended when there are any."""
    return frame["variant"] + frame["hparams"].map(lambda h: f" ({h})" if h else "")


MAIN, CI, FLOOR, WITHIN, SIGNS, LARGEST = (
    "mean ΔRMSE %",
    "95% CI",
    "noise floor %",
    "within floor",
    "cases > 0 / < 0",
    "largest ΔRMSE %",
)
"""The column names of `summary` (read back by `retrofit.results.figure_tables`)."""


def host_floors(frame: pd.DataFrame, floors: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """Host label as the tables show it (`settings_apart`) -> the noise floor (% of RMSE) of the
    (host, device) its rows ran on, for each label whose rows ran on one device that `floors` holds."""
    shown = settings_apart(frame.assign(host_name=frame["host"]))
    pairs = {label: set(zip(g["host_name"], g["device"], strict=True)) for label, g in shown.groupby("host")}
    return {label: floors[(*key,)] for label, (key, *more) in pairs.items() if not more and key in floors}


def floor_cells(mean: float, floor: float | None) -> dict[str, str]:
    """The floor columns of a row of mean ΔRMSE % `mean`: the floor and whether |mean| lies below it;
    `not measured` for a host without one (NaN), `not given` when no floors were given (None)."""
    if floor is None or math.isnan(floor):
        said = "not given" if floor is None else "not measured"
        return {FLOOR: said, WITHIN: "n/a"}
    return {FLOOR: percent(floor, signed=False), WITHIN: "yes" if abs(mean) < floor else "no"}


def summary(
    frame: pd.DataFrame, by: Sequence[str] = ("host", "variant"), floors: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """Per group of `by` (variants with their overrides, in `in_variant_order`): cases, mean
    ΔRMSE % with its bootstrap 95 % CI, with `floors` (host label -> noise floor, `host_floors`) the
    host's floor and whether the mean lies within it, cases above / below zero and the signed largest
    ΔRMSE %, as text cells; an arm's group (`by` with `arm`) also gives its tau c and sink."""
    rows = []
    labelled = in_variant_order(frame).assign(variant=variant_label)
    for keys, group in labelled.groupby(list(by), sort=False):
        low, high = frame_ci(group)
        delta = group["delta_rmse_pct"]
        named = dict(zip(by, keys, strict=True))
        settings = {"tau c": f"{group['tau_c'].iloc[0]:g}", "sink": group["eps_mode"].iloc[0]} if "arm" in by else {}
        floor = None if floors is None else floors.get(named["host"], math.nan)
        rows.append(
            {
                **named,
                **settings,
                "cases": str(len(group)),
                MAIN: percent(delta.mean()),
                CI: f"[{percent(low)}, {percent(high)}]" if len(group) > 1 else "n/a (1 case)",
                **(floor_cells(delta.mean(), floor) if floors is not None else {}),
                SIGNS: f"{(delta > 0).sum()} / {(delta < 0).sum()}",
                LARGEST: percent(largest(delta)),
            }
        )
    return pd.DataFrame(rows)


def distribution(frame: pd.DataFrame, by: Sequence[str] = ("host", "variant")) -> pd.DataFrame:
    """Per group of `by` (as `summary`'s): the mean of each distribution delta with its 95 % CI
    (`DISTRIBUTION_DELTAS`, in their units), as text cells."""
    labelled = in_variant_order(frame).assign(variant=variant_label)
    rows = [
        {
            **dict(zip(by, keys, strict=True)),
            **{label: mean_with_ci(group, col, scale) for col, (label, scale) in DISTRIBUTION_DELTAS.items()},
        }
        for keys, group in labelled.groupby(list(by), sort=False)
    ]
    return pd.DataFrame(rows)


def spread(values: pd.Series) -> str:
    """`mean ± sd` of `values` (sd over them, n − 1), the mean alone for one value."""
    mean = percent(values.mean())
    return mean if len(values) < 2 else f"{mean} ± {percent(values.std(ddof=1), signed=False)}"


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """Per host × dataset: the seeds, the baseline RMSE (mean over seeds, 4 significant digits) and
    per variant other than the baseline its ΔRMSE % as mean ± sd over the seeds (`spread`), as text
    cells; `not run` where a variant has no case (e.g. a closed variant on a v2 host)."""
    rows = in_variant_order(frame).assign(variant=variant_label)
    variants = [v for v in dict.fromkeys(rows["variant"]) if v != "baseline"]
    cells = rows.groupby(["host", "dataset", "variant"])["delta_rmse_pct"].agg(spread).unstack("variant")
    base = rows.groupby(["host", "dataset"]).agg(seeds=("seed", "nunique"), rmse=("baseline_rmse", "mean"))
    table = pd.DataFrame(
        {"seeds": base["seeds"].astype(str), "baseline RMSE": base["rmse"].map(lambda v: f"{v:.4g}")}, index=base.index
    )
    deltas = cells.reindex(index=base.index, columns=variants).fillna("not run")
    return table.join(deltas).reset_index()


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
    note, labelled = settings_note(frame), settings_apart(frame.assign(host_name=frame["host"]))
    names = dict(zip(labelled["host"], zip(labelled["host_name"], labelled["device"], strict=True), strict=True))
    floor_of = host_floors(frame, floors or {})
    frame = in_variant_order(labelled)
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
            ci = f" [{percent(low)}, {percent(high)}]" if len(cases) > 1 else ""
            mean, floor = cases["delta_rmse_pct"].mean(), floor_of.get(host, math.nan)
            mark = " ≈0" if abs(mean) < floor else ""  # NaN (not measured) marks nothing
            line[f"{host} ΔRMSE % [95% CI] (largest)"] = (
                f"{percent(mean)}{mark}{ci} ({percent(largest(cases['delta_rmse_pct']))})"
            )
        line["time / baseline"] = ", ".join(
            f"{group.loc[group['host'] == h, 'predict_time_ratio'].median():.2f}×"
            + timing_settings(group[group["host"] == h])
            + noise_mark(group[group["host"] == h])
            for h in hosts
            if (group["host"] == h).any()
        ).replace("nan×", "not timed")
        table.append(line)
    text = markdown(pd.DataFrame(table)) if table else "(no variant beyond the baseline ran)"
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
        f"{named(*key)} {percent(floors[key], signed=False)} %"
        if key in floors
        else f"{named(*key)}: floor not measured" + (f" (measure it: {commands[key]})" if key in commands else "")
        for key in hosts
    ]
    return (
        f"Noise floor (how far the host's own stock RMSE moves under changes that should not matter): "
        f"{'; '.join(said)}. ≈0: a mean |ΔRMSE| within its host's floor."
    )
