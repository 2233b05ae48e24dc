"""The data dictionary of every results CSV (column, unit, meaning), generated from the code that
writes the columns:

    python -m retrofit.results.dictionary > docs/data_dictionary.md

Each writer keeps its columns' docs next to its columns, one source per column: a mapping column ->
(unit, meaning), e.g. `retrofit.results.record.COLUMN_DOCS` (read off `UnitRecord`'s fields) or a
benchmark's `COLUMN_DOCS` (its `COLUMNS` are that mapping's keys). `TABLES` names them as
`module:attribute` per file name: the writers sit above `retrofit.results` in the layers
(benchmarks, runtimes) or beside it, so they are imported only when the dictionary is generated.
"""

import importlib
from collections.abc import Mapping

ColumnDocs = Mapping[str, tuple[str, str]]
"""Column -> (unit, meaning), in the file's column order."""

TABLES: dict[str, tuple[str, str]] = {
    "retrofit_rmse.csv": ("retrofit.results.record:COLUMN_DOCS", "the sweep: one row per unit (`make retrofit`)"),
    "retrofit_long.csv": (
        "retrofit.results.long_format:COLUMN_DOCS",
        "the sweep in long format: one row per method × dataset × fold × metric",
    ),
    "decomposition.csv": ("retrofit.results.run_files:ARM_DOCS", "the decomposition's arm rows of the sweep"),
    "tau_sweep.csv": ("retrofit.results.tau_table:COLUMN_DOCS", "mean ΔRMSE against tau's c (`make tau-sweep`)"),
    "audit.csv": ("retrofit.audit.run:COLUMN_DOCS", "the O-closure audit (`make audit`)"),
    "noise_floor.csv": ("retrofit.measure.floor_table:COLUMN_DOCS", "each host's noise floor"),
    "sink_mass.csv": ("retrofit.audit.sink:COLUMN_DOCS", "OAttention's sink mass per block and head"),
    "scale.csv": ("benchmarks.scale.scale_rows:COLUMN_DOCS", "every architecture at default size (`make scale-check`)"),
    "bench_batch.csv": ("experiments.bench_batch:COLUMN_DOCS", "predict_many vs sequential predict"),
    "padding_demo.csv": ("experiments.padding_demo:COLUMN_DOCS", "predict_many's padding fed to non-closed hosts"),
    "removal_bench.csv": (
        "benchmarks.removal_vs_refit.explain_table:COLUMN_DOCS",
        "the explanation benchmark (`make explain-bench`)",
    ),
    "removal_scale.csv": (
        "benchmarks.removal_vs_refit.removal_at_scale:COLUMN_DOCS",
        "removal explanations at default size against refits (`make explain-scale`)",
    ),
    "removal_stages.csv": (
        "benchmarks.removal_vs_refit.explain_table:STAGE_DOCS",
        "where a coalition's time goes, per stage",
    ),
    "exactness.csv": ("benchmarks.attention_exactness:COLUMN_DOCS", "OAttention against its float64 reference"),
    "ablation.csv": ("benchmarks.null_insertion:COLUMN_DOCS", "two-block hosts under null insertion (`make ablation`)"),
    "host_quality.csv": ("benchmarks.host_baselines:SCORE_DOCS", "host RMSE against simple baselines, per case"),
    "host_quality_summary.csv": ("benchmarks.host_baselines:SUMMARY_DOCS", "the host quality bar, per model"),
    "host_extrapolation.csv": ("benchmarks.host_baselines:EXTRAPOLATION_DOCS", "how a host extends a linear trend"),
    "suite_scores.csv": ("benchmarks.suite:SCORE_DOCS", "the suite, long: one row per table × seed × model"),
    "suite_tables.csv": ("benchmarks.suite:TABLE_DOCS", "the suite per table × model: ratios to the baselines"),
    "suite_summary.csv": ("benchmarks.suite:SUMMARY_DOCS", "the suite per half × model (`make suite`)"),
    "suite_deltas.csv": ("benchmarks.suite:DELTA_DOCS", "the suite's matched ΔRMSE per half × host × variant"),
    "sweep_cost.csv": ("benchmarks.phase_costs:COLUMN_DOCS", "CPU seconds per phase of sweep cases"),
    "command_times.csv": ("retrofit.runtimes:COLUMN_DOCS", "each make target's last successful run"),
    "<dataset>_explanation.csv": (
        "retrofit.explanation:COLUMN_DOCS",
        "`retrofit explain` (`retrofit.explain`): one row per explained row × feature (and pair, with order=2)",
    ),
}
"""Results CSV file name -> (`module:attribute` of its `ColumnDocs`, what the file holds)."""

UNITS = """Units: `target units` are those of the dataset's target; `%` is per cent of the stock host's value
(`delta_*_pct`); `fraction` is a share in [0, 1] (the tables show `delta_coverage_90` ×100, in
points); `nats` are natural-log units; `s` wall seconds, `CPU s` CPU seconds; `ratio` a quotient
(1 = equal); `label`, `text` and `flag` are not numbers; a digest is the first 16 hex digits of a
sha256. An empty cell or NaN is a value that does not apply."""


def column_docs(file_name: str) -> ColumnDocs:
    """The `ColumnDocs` of the results CSV `file_name` (a key of `TABLES`), imported from its writer."""
    module, attribute = TABLES[file_name][0].split(":")
    return getattr(importlib.import_module(module), attribute)


def cell(text: str) -> str:
    """`text` as a Markdown table cell (a `|` escaped)."""
    return text.replace("|", "\\|")


def dictionary_markdown() -> str:
    """docs/data_dictionary.md: per results CSV (`TABLES`), what it holds and a column | unit |
    meaning table, in the order of `TABLES`."""
    lines = [
        "# Data dictionary of the results CSVs",
        "",
        "Generated from the code that writes each file's columns (`.venv/bin/python -m retrofit.results.dictionary >",
        "docs/data_dictionary.md`); a test checks that it covers every column of `results/` and matches",
        "the code.",
        "",
        UNITS,
    ]
    for file_name, (source, about) in TABLES.items():
        lines += ["", f"## {file_name}", "", f"{about[0].upper()}{about[1:]}; columns from `{source}`.", ""]
        lines += ["| column | unit | meaning |", "|---|---|---|"]
        lines += [f"| `{name}` | {cell(unit)} | {cell(doc)} |" for name, (unit, doc) in column_docs(file_name).items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(dictionary_markdown(), end="")
