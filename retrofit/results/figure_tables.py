"""The Markdown tables of the sweep's measured figures that README.md and docs/results.md show, one
function per generated region (`retrofit.results.generated_docs.REGIONS`), each reading the committed
results files under a `results` folder, and the helpers every such table uses.

Every function renders with fixed formats (no locale, no clock, rows in the file's or a sorted
order), so the same results files give the same text byte for byte; `retrofit.results.generated_docs`
writes them into the documents' marked regions.
"""

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from retrofit.results.tables import CI, LARGEST, MAIN, SIGNS

Rows = list[dict[str, str]]


def markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table of `rows` under `header`, one line each, ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def record_table(path: Path, column: str) -> Rows:
    """The rows (column -> stripped cell) of the first Markdown table of `path` whose header has `column`."""
    lines = path.read_text().splitlines()

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip().strip("|").split("|")]

    start = next(i for i, line in enumerate(lines) if line.startswith("|") and column in cells(line))
    header = cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, cells(line), strict=True)))
    return rows


def ratio(median: float, low: float, high: float) -> str:
    """A median ratio with its per-round range: `1.05× (0.98–1.12)`."""
    return f"{median:.2f}× ({low:.2f}–{high:.2f})"


def ordered(values: pd.Series) -> list:
    """`values`' distinct entries in the order they first appear."""
    return list(dict.fromkeys(values))


# -- the sweep (`make retrofit`) -------------------------------------------------------------------


def summary_cell(row: dict[str, str] | None) -> str:
    """mean [CI] (largest) of a record row; `refused` where the record has no row (not run)."""
    return "refused" if row is None else f"{row[MAIN]} {row[CI]} ({row[LARGEST]})"


VARIANT_LABELS = {
    "oa_only": "`oa_only` (OAttention, paper's sink)",
    "full_o": "`full_o` (+ OFFN, ONorm)",
    "o_closed": "`o_closed` (whole host closed)",
}
"""What the README's headline says each built-in variant is."""


def headline(results: Path) -> str:
    """README's headline: per variant (in the order of `retrofit_table.md`) and host, mean ΔRMSE % [CI]
    (largest case) from `retrofit_table.md`, and the `oa_only` rows of the `presence_only` and `sink_only` arms from
    `decomposition.md`, each named by its arm and what it sets."""
    record = {(r["host"], r["variant"]): r for r in record_table(results / "retrofit_table.md", MAIN)}
    arms = {(r["host"], r["variant"], r["arm"]): r for r in record_table(results / "decomposition.md", "arm")}
    hosts = ordered(pd.Series([host for host, _ in record]))
    rows = [
        [VARIANT_LABELS.get(variant, f"`{variant}`"), *(summary_cell(record.get((host, variant))) for host in hosts)]
        for variant in ordered(pd.Series([variant for _, variant in record]))  # the table's order
    ]
    rows += [
        [label, *(summary_cell(arms.get((host, "oa_only", arm))) for host in hosts)]
        for arm, label in (
            ("presence_only", "`oa_only`, arm `presence_only` (relative sink, seed 0)"),
            ("sink_only", "`oa_only`, arm `sink_only` (presences → 1, paper's sink, seed 0)"),
        )
    ]
    return markdown(["variant", *(f"`{host}` mean ΔRMSE % [CI] (largest)" for host in hosts)], rows)


def retrofit_main(results: Path) -> str:
    """The record's main table without its baseline rows and times: host, variant, mean ΔRMSE %, CI,
    cases above / below zero, the largest case (signed)."""
    columns = ["host", "variant", MAIN, CI, SIGNS, LARGEST]
    rows = [
        [f"`{r['host']}`", f"`{r['variant']}`", *(r[c] for c in columns[2:])]
        for r in record_table(results / "retrofit_table.md", MAIN)
        if r["variant"] != "baseline"
    ]
    return markdown(columns, rows)


def retrofit_per_dataset(results: Path) -> str:
    """The record's per-dataset table (`retrofit_per_dataset.md`: ΔRMSE % as mean ± sd over the seeds)."""
    table = record_table(results / "retrofit_per_dataset.md", "baseline RMSE")
    variants = [c for c in table[0] if c not in ("host", "dataset", "baseline RMSE", "seeds")]
    columns = ["host", "dataset", "baseline RMSE", *variants]
    return markdown(columns, [[r[c] for c in columns] for r in table])


def decomposition(results: Path) -> str:
    """The `oa_only` arms of `decomposition.md`: arm, tau's c, sink, and per host mean [CI] (largest)."""
    table = [r for r in record_table(results / "decomposition.md", "arm") if r["variant"] == "oa_only"]
    hosts = ordered(pd.Series([r["host"] for r in table]))
    cells = {(r["host"], r["arm"]): r for r in table}
    rows = [
        [f"`{arm}`", cells[(hosts[0], arm)]["tau c"], cells[(hosts[0], arm)]["sink"]]
        + [summary_cell(cells.get((host, arm))) for host in hosts]
        for arm in ordered(pd.Series([r["arm"] for r in table]))
    ]
    return markdown(["arm", "tau c", "sink", *(f"`{host}`" for host in hosts)], rows)


def tau_sweep(results: Path) -> str:
    """`tau_sweep.csv`: per host, variant and c, mean ΔRMSE % [CI] and the largest |ΔRMSE| %."""
    frame = pd.read_csv(results / "tau_sweep.csv")
    rows = [
        [
            f"`{r.host}`",
            f"`{r.variant}`",
            f"{r.c:g}",
            f"{r.mean_delta_rmse_pct:+.2g}",
            f"[{r.ci_low:+.2g}, {r.ci_high:+.2g}]",
            f"{r.max_abs_delta_rmse_pct:.2g}",
        ]
        for r in frame.itertuples()
    ]
    return markdown(["host", "variant", "c", MAIN, CI, "max abs ΔRMSE %"], rows)
