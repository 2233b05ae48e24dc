"""The measured figures of README.md and docs/*.md are generated from the committed results/
(`retrofit.results.generated_docs`, `make docs`): every generated region is what the results files
give now, every renderer feeds a region, and a region follows its results file."""

import shutil

import pytest

from retrofit.results.generated_docs import REGIONS, ROOT, documents, regenerate, region_names, stale


def test_every_generated_region_is_current_with_the_committed_results():
    assert stale() == [], "regenerate: make docs (python -m retrofit.results.generated_docs)"


def test_every_renderer_feeds_a_region_of_the_docs():
    used = {name for path in documents() for name in region_names(path.read_text())}
    assert used == set(REGIONS)


def test_the_readme_headline_is_generated():
    assert "headline" in region_names((ROOT / "README.md").read_text())


def test_a_region_follows_its_results_file(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results)
    text = "before\n<!-- generated: ablation -->\nold\n<!-- end generated -->\nafter\n"
    first = regenerate(text, results)
    assert first.startswith("before\n<!-- generated: ablation -->\n| host |") and first.endswith(
        "<!-- end generated -->\nafter\n"
    )
    assert regenerate(first, results) == first
    csv = results / "ablation.csv"
    header, first_row, *rest = csv.read_text().splitlines(keepends=True)
    assert first_row.startswith("standard,")  # the table's first cell
    measured = first_row.rstrip("\n").rsplit(",", 1)[1]
    csv.write_text("".join([header, first_row.replace(measured, "0.5"), *rest]))
    changed = regenerate(first, results)
    assert "| standard | 0.5 |" in changed and f"| standard | {float(measured):.3g} |" in first


def test_an_unknown_region_is_refused_by_name():
    with pytest.raises(KeyError, match="'no-such-table' is not one of"):
        regenerate("<!-- generated: no-such-table -->\n<!-- end generated -->\n", ROOT / "results")
