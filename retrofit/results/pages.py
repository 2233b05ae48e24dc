"""The text of each table file of a run, from the cell frames of `retrofit.results.tables` and
`retrofit.results.times`, rendered by `retrofit.results.render` (a `.tex` shows its `.md`'s cells):

- `TABLE` / `TABLE_TEX`: per host × variant, mean ΔRMSE % with its CI, the host's noise floor, the
  cases above / below zero and the largest case; the `.md` adds the distribution deltas;
- `PER_DATASET` / `PER_DATASET_TEX`: per host × dataset, each variant's ΔRMSE % as mean ± sd over the seeds;
- `TIMES_TABLE`: the predict-time ratios and their verdict against the goal;
- `ARMS_TABLE`: the decomposition's arms, as `TABLE`, and their distribution deltas.

The baseline (the frozen stock host, every delta 0 by definition) is left out of every table. Rows
of different settings are kept apart (`settings_apart`) and a line above the table says so.
"""

from collections.abc import Mapping

import pandas as pd

from retrofit.results.bootstrap import N_BOOTSTRAP
from retrofit.results.render import latex, markdown
from retrofit.results.tables import (
    distribution,
    host_floors,
    in_variant_order,
    per_dataset,
    settings_apart,
    settings_note,
    summary,
)
from retrofit.results.times import TIME_GOAL, times

TABLE, TABLE_TEX = "retrofit_table.md", "retrofit_table.tex"
PER_DATASET, PER_DATASET_TEX = "retrofit_per_dataset.md", "retrofit_per_dataset.tex"
TIMES_TABLE, ARMS_TABLE = "retrofit_times.md", "decomposition.md"
Floors = Mapping[tuple[str, str], float] | None
"""(host, device) -> noise floor in % of RMSE (`retrofit.runner.finish.noise_floors`); None: not given."""


def cases_line(frame: pd.DataFrame) -> str:
    """How many cases `frame` holds and how its CIs are drawn."""
    cases = len(frame[["host", "dataset", "seed"]].drop_duplicates())
    return (
        f"{cases} host × dataset × seed cases; 95% CI: two-level bootstrap, datasets then seeds within "
        f"({N_BOOTSTRAP} draws, percentile). Largest: the case of largest |ΔRMSE|, signed."
    )


DISTRIBUTION_NOTE = (
    "Matched deltas against the baseline, mean [95% CI]: ΔNLL in nats, ΔCRPS in %, Δcoverage of the central "
    "90% interval in points (the CSV's `delta_coverage_90` is a fraction: 1 point = 0.01)."
)


def floors_note(given: bool) -> str:
    """What the floor columns mean, or (not `given`) that no floors were given and how to render them."""
    if not given:
        return (
            "Noise floor `not given`: this aggregation had none; `make tables` (the record) or "
            "`.venv/bin/python experiments/tables.py results_dir=<this folder>` renders it from the record's "
            "noise_floor.csv."
        )
    return (
        "Noise floor: how far the host's own stock RMSE moves under changes that should not matter "
        "(results/noise_floor.csv, `make noise-floor`); within floor: |mean ΔRMSE| below it."
    )


NOTHING = pd.DataFrame({"note": ["no variant beyond the baseline ran"]})
"""The one-cell table that stands for a table without rows."""


def _variants(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` other than the baseline's, settings kept apart, in `in_variant_order`."""
    shown = settings_apart(frame)
    return in_variant_order(shown[shown["variant"] != "baseline"])


def _or_nothing(cells: pd.DataFrame) -> pd.DataFrame:
    return cells if len(cells) else NOTHING


def main_cells(frame: pd.DataFrame, floors: Floors) -> pd.DataFrame:
    """The main table's cells (`summary`) of the main rows `frame`, with each host's floor
    (`NOTHING` when only the baseline ran)."""
    return _or_nothing(summary(_variants(frame), floors=None if floors is None else host_floors(frame, floors)))


def _page(title: str, frame: pd.DataFrame, *parts: str) -> str:
    note = settings_note(frame)
    return "\n".join([f"# {title}", "", *([note, ""] if note else []), *(f"{part}\n" for part in parts)])


def table_markdown(frame: pd.DataFrame, floors: Floors = None) -> str:
    """`TABLE` of the main rows `frame`: the main table, then the distribution deltas."""
    about = (
        f"{cases_line(frame)} {floors_note(floors is not None)} "
        f"Per dataset with the seeds' spread: [{PER_DATASET}]({PER_DATASET}); "
        f"predict times: [{TIMES_TABLE}]({TIMES_TABLE}); LaTeX: `{TABLE_TEX}`, `{PER_DATASET_TEX}`."
    )
    return _page(
        "Retrofit RMSE: matched ΔRMSE% = 100 · (RMSE(variant) − RMSE(baseline)) / RMSE(baseline)",
        frame,
        about,
        markdown(main_cells(frame, floors)),
        "## Predictive distribution",
        DISTRIBUTION_NOTE,
        markdown(_or_nothing(distribution(_variants(frame)))),
    )


def table_latex(frame: pd.DataFrame, floors: Floors = None) -> str:
    """`TABLE_TEX`: the main table of `table_markdown` as a booktabs table."""
    caption = (
        "Matched RMSE change of each retrofit variant against the frozen stock host, in % of its RMSE: the mean "
        "over the cases with its 95% CI, and the host's noise floor with whether |mean| lies below it. "
        f"{cases_line(frame)}"
    )
    return latex(main_cells(frame, floors), caption, "tab:retrofit-rmse")


PER_DATASET_NOTE = (
    "Per host × dataset: the seeds, the stock host's RMSE (mean over the seeds, target units) and each variant's "
    "matched ΔRMSE %, mean ± sd (n − 1) over the seeds; `not run`: the variant has no case there (a closed variant "
    "on a host that cannot be closed)."
)


def per_dataset_markdown(frame: pd.DataFrame) -> str:
    """`PER_DATASET` of the main rows `frame`."""
    title = "Retrofit RMSE per dataset: ΔRMSE % as mean ± sd over the seeds"
    return _page(title, frame, PER_DATASET_NOTE, markdown(per_dataset(settings_apart(frame))))


def per_dataset_latex(frame: pd.DataFrame) -> str:
    """`PER_DATASET_TEX`: the table of `per_dataset_markdown` as a booktabs table."""
    return latex(per_dataset(settings_apart(frame)), PER_DATASET_NOTE, "tab:retrofit-per-dataset")


def times_markdown(frame: pd.DataFrame) -> str:
    """`TIMES_TABLE` of the main rows `frame`."""
    note = (
        "Per host × variant over its timed units. A unit's ratio is the median over interleaved, paired rounds "
        "(after a warm-up) of its predict seconds / the stock host's in the same round. Median ratio: the median "
        "of those medians; range of medians: their smallest and largest; per-round range: the smallest and largest "
        "single round; timing: the rounds and the ensemble members timed; load / core: the mean 1-minute load per "
        f"core while timed; vs {TIME_GOAL:.2f}× goal: `within noise` when the per-round range straddles the goal, "
        "else `met` or `missed`. Times move with the machine and its load."
    )
    return _page("Predict time / baseline", frame, note, markdown(_or_nothing(times(_variants(frame)))))


def arms_markdown(arms: pd.DataFrame, floors: Mapping[str, float] | None = None) -> str:
    """`ARMS_TABLE` of the arm rows `arms` (settings kept apart): per host × variant × arm its tau c,
    sink and the main table's columns, the floor's with `floors` (host label -> noise floor,
    `host_floors` of the main rows), then the distribution deltas."""
    by = ("host", "variant", "arm")
    about = (
        "Each arm runs the variant on the same fit as the baseline with the tau constant c and the sink mode "
        "shown: c as in the paper makes presences < 1, a tiny c makes every non-null presence 1 to rounding; "
        f"`absolute` is the paper's sink, `relative` a shift-invariant one. {cases_line(arms)} "
        f"{floors_note(floors is not None)}"
    )
    shown = settings_apart(arms).assign(hparams="")  # the arm names its overrides
    return _page(
        "Retrofit cost: sink and presence effects",
        arms,
        about,
        markdown(summary(shown, by=by, floors=floors)),
        "## Predictive distribution",
        DISTRIBUTION_NOTE,
        markdown(distribution(shown, by=by)),
    )
