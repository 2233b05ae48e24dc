"""The README's headline and docs/results.md quote the committed record's table, figure for figure.

`make retrofit` rewrites `results/retrofit_table.md`; the prose pages copy its main-table figures
(mean ΔRMSE %, its CI, the largest case); predict times, which move with the machine and its load,
are read in the table itself, with their spread. These tests fail when the two drift apart.
"""

import re
from pathlib import Path

import pytest

from retrofit.adapters import ARCHITECTURES
from retrofit.hosts import available, get_path
from retrofit.hosts.validation import architecture_name

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
VARIANTS = ("oa_only", "full_o", "o_closed")


def _record_rows() -> dict[tuple[str, str], dict[str, str]]:
    """(host, variant) -> the main table's cells of `results/retrofit_table.md`, by column name."""
    lines = (ROOT / "results" / "retrofit_table.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| host"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        rows[(cells["host"], cells["variant"])] = cells
    return rows


def _signed(text: str) -> str:
    """The record's ASCII minus as the pages' typographic one."""
    return text.replace("-", "−")


def _headline_hosts() -> list[str]:
    """The hosts of the README headline's columns, in their order (`| variant | `<host>` mean ΔRMSE % ...`)."""
    header = next(line for line in README.splitlines() if line.startswith("| variant |"))
    return re.findall(r"`(\w+)` mean ΔRMSE", header)


RECORD = _record_rows()
MEASURED = [key for key in RECORD if key[1] in VARIANTS]


def test_the_record_table_has_every_variant_of_every_shipped_host():
    """A row per shipped host and variant it runs: `o_closed` exactly where the host's architecture closes."""
    assert set(available()) == {host for host, _ in MEASURED}
    for host in available():
        closes = ARCHITECTURES[architecture_name(get_path(host))].closed_wrapper is not None
        assert ((host, "o_closed") in RECORD) == closes, host


def test_the_readme_headline_has_a_column_per_shipped_host():
    assert sorted(_headline_hosts()) == sorted(available())


@pytest.mark.parametrize(("host", "variant"), MEASURED)
def test_results_page_quotes_the_record_row(host, variant):
    cells = RECORD[(host, variant)]
    row = next(
        line
        for line in (ROOT / "docs" / "results.md").read_text().splitlines()
        if line.startswith(f"| `{host}` | `{variant}` |")
    )
    quoted = [cell.strip() for cell in row.strip("|").split("|")]
    assert quoted[2:4] == [_signed(cells["mean ΔRMSE %"]), _signed(cells["95% CI"])]
    assert quoted[4] == cells["cases > 0 / < 0"]
    assert float(quoted[5]) == abs(float(cells["largest ΔRMSE %"]))


@pytest.mark.parametrize("variant", VARIANTS)
def test_readme_headline_quotes_the_record_rows(variant):
    row = next(line for line in README.splitlines() if line.startswith(f"| `{variant}` ("))
    quoted = [cell.strip() for cell in row.strip("|").split("|")]
    hosts = _headline_hosts()
    for column, host in enumerate(hosts, start=1):
        cells = RECORD.get((host, variant))
        if cells is None:
            assert quoted[column].startswith("refused")
            continue
        mean, ci, largest = (_signed(cells[name]) for name in ("mean ΔRMSE %", "95% CI", "largest ΔRMSE %"))
        assert quoted[column] == f"{mean} {ci} ({largest})"
    assert len(quoted) == len(hosts) + 1  # times live in results/retrofit_table.md, with their spread and load
