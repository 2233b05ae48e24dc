"""The data dictionary documents every column of every committed results CSV, with its unit, and
docs/data_dictionary.md is what the code generates now."""

from pathlib import Path

import pandas as pd
import pytest

from retrofit.results.dictionary import TABLES, column_docs, dictionary_markdown

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted((ROOT / "results").rglob("*.csv"))


def test_the_committed_results_are_there_to_check():
    assert {path.name for path in COMMITTED} >= {"retrofit_rmse.csv", "audit.csv", "command_times.csv"}


@pytest.mark.parametrize("path", COMMITTED, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_column_of_a_committed_results_csv_is_documented(path):
    assert path.name in TABLES, f"{path.name}: add it to retrofit.results.dictionary.TABLES"
    docs = column_docs(path.name)
    columns = list(pd.read_csv(path, nrows=0).columns)
    assert [c for c in columns if c not in docs] == []
    assert all(unit and doc for unit, doc in docs.values())


def test_units_say_what_the_tables_convert():
    record = column_docs("retrofit_rmse.csv")
    assert record["delta_coverage_90"][0] == "fraction" and "points" in record["delta_coverage_90"][1]
    assert record["delta_rmse_pct"][0] == record["delta_crps_pct"][0] == "%"
    assert record["delta_nll"][0] == "nats" and record["predict_seconds"][0] == "s"
    assert column_docs("decomposition.csv")["delta_coverage_90"] == record["delta_coverage_90"]


def test_the_committed_dictionary_is_what_the_code_generates():
    committed = (ROOT / "docs" / "data_dictionary.md").read_text()
    assert committed == dictionary_markdown(), (
        "regenerate: python -m retrofit.results.dictionary > docs/data_dictionary.md"
    )
    assert "| `tau_c` | dimensionless | c of the calibrated tau rule, tau = c · median \\|\\|h\\|\\|²" in committed
