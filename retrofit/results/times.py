"""The predict-time ratios of the timed units: the sweep's timing table (`retrofit_times.md`) and the
marks the headline puts beside a ratio.

A timed unit carries the median over its interleaved rounds of predict seconds / the stock host's in
the same round (`predict_time_ratio`) and that ratio's per-round range. Over the timed units of a
host × variant: the median of their medians, the range of those medians, the per-round range over
all of them, the timing settings and the mean load per core they ran under, and the verdict against
`TIME_GOAL`: `within noise` when the per-round range straddles it, else `met` or `missed`.
Frames are `retrofit.results.record.frame_of` frames; nothing here reads a file.
"""

import pandas as pd

TIME_GOAL = 1.10
"""The predict-time ratio a retrofit aims to stay under; a ratio whose per-round range straddles it
is said to be within noise, neither met nor missed (`noise_mark`)."""


def timed(group: pd.DataFrame) -> pd.DataFrame:
    """The rows of `group` that were timed (a predict-time ratio recorded)."""
    return group[group["predict_time_ratio"].notna()]


def round_range(group: pd.DataFrame) -> tuple[float, float]:
    """The smallest and largest per-round ratio over the timed units of `group` (NaN when none)."""
    rows = timed(group)
    return rows["predict_time_ratio_min"].min(), rows["predict_time_ratio_max"].max()


def verdict(group: pd.DataFrame) -> str:
    """`within noise` when the per-round ratios of the timed units of `group` straddle `TIME_GOAL`,
    else `met` (the median of their medians at most the goal) or `missed`; `not timed` without any."""
    if timed(group).empty:
        return "not timed"
    low, high = round_range(group)
    if low <= TIME_GOAL <= high:
        return "within noise"
    return "met" if timed(group)["predict_time_ratio"].median() <= TIME_GOAL else "missed"


def mean_load(group: pd.DataFrame) -> float:
    """The mean load per core the timed units of `group` ran under (NaN when not recorded)."""
    rows = timed(group)
    return rows["load"].mean() if "load" in rows and not rows.empty else float("nan")


def noise_mark(group: pd.DataFrame) -> str:
    """` within noise (...)` when the per-round ratios of the timed units of `group` straddle
    `TIME_GOAL`, then the mean load per core the timings ran under (`mean_load`), or ""."""
    if timed(group).empty:
        return ""
    low, high = round_range(group)
    spans = f" within noise (per-round ratios {low:.2f}–{high:.2f}, across {TIME_GOAL:.2f}×)"
    mark = spans if verdict(group) == "within noise" else ""
    load = mean_load(group)
    return mark + (f" (load {load:.2f}/core)" if pd.notna(load) else "")


def timing_text(group: pd.DataFrame) -> str:
    """The timing settings the timed units of `group` ran under, e.g. `3 rounds, 1 member`; several,
    `;`-separated, when they differ; "" when none was timed."""
    if "timing_rounds" not in group:
        return ""
    rows = group[group["timing_rounds"] > 0]
    pairs = sorted(set(zip(rows["timing_rounds"], rows["timing_members"], strict=True)))
    return "; ".join(f"{r} rounds, {m} member{'s' if m != 1 else ''}" for r, m in pairs)


def timing_settings(group: pd.DataFrame) -> str:
    """`timing_text` in parentheses after a space, e.g. ` (3 rounds, 1 member)`, or ""."""
    text = timing_text(group)
    return f" ({text})" if text else ""


def times(frame: pd.DataFrame, by: tuple[str, ...] = ("host", "variant")) -> pd.DataFrame:
    """Per group of `by` (in the order of `frame`): the timed units, the median of their median
    ratios, the range of those medians, the per-round range, the timing settings, the mean load per
    core and the verdict against `TIME_GOAL` (`verdict`), as text cells; `n/a` where none was timed."""
    rows = []
    for keys, group in frame.groupby(list(by), sort=False):
        ratios, (low, high), load = timed(group)["predict_time_ratio"], round_range(group), mean_load(group)
        some = not ratios.empty
        rows.append(
            {
                **dict(zip(by, keys, strict=True)),
                "timed units": str(len(ratios)),
                "median ratio": f"{ratios.median():.2f}×" if some else "n/a",
                "range of medians": f"{ratios.min():.2f}–{ratios.max():.2f}" if some else "n/a",
                "per-round range": f"{low:.2f}–{high:.2f}" if some else "n/a",
                "timing": timing_text(group) or "n/a",
                "load / core": f"{load:.2f}" if pd.notna(load) else "n/a",
                f"vs {TIME_GOAL:.2f}× goal": verdict(group),
            }
        )
    return pd.DataFrame(rows)
