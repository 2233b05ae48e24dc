"""Every table of the docs that says which variants run on which host or architecture, and which
adapters a variant applies, agrees with what the registries run: the architecture registry's
refusals (`ArchitectureSpec.refusal`), the shipped hosts' architectures, the built-in variants."""

import re
from pathlib import Path

import pytest

from retrofit.adapters import ARCHITECTURES
from retrofit.hosts import SHIPPED_HOSTS, get_path
from retrofit.hosts.validation import architecture_name
from retrofit.variants import available_variants, resolve_variant

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = available_variants()


def table(path: Path, header: str) -> dict[str, list[str]]:
    """The Markdown table of `path` whose header row starts with `header`: first cell's backticked
    name -> the row's cells."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[re.findall(r"`([^`]+)`", cells[0])[0]] = cells
    return rows


def runs_on(architecture: str) -> set[str]:
    """The built-in variants the registry runs on `architecture`."""
    spec = ARCHITECTURES[architecture]
    return {variant for variant in VARIANTS if not spec.refusal(resolve_variant(variant))}


def said_to_run(cell: str) -> set[str]:
    """The variants a "variants that run" cell lists before `refused:`."""
    return set(re.findall(r"`(\w+)`", cell.split("refused:")[0])) & set(VARIANTS)


def said_refused(cell: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", cell.split("refused:")[1])) & set(VARIANTS) if "refused:" in cell else set()


def test_the_shipped_host_table_says_what_runs_on_each_host():
    rows = table(ROOT / "docs" / "hosts.md", "| host (`host=`) |")
    assert sorted(rows) == sorted(SHIPPED_HOSTS)
    for host, cells in rows.items():
        architecture = architecture_name(get_path(host))
        assert f"`{architecture}`" in cells[1], host
        assert said_to_run(cells[2]) == runs_on(architecture), host
        assert said_refused(cells[2]) == set(VARIANTS) - runs_on(architecture), host


def test_the_architecture_table_says_what_runs_on_each_architecture():
    rows = table(ROOT / "docs" / "hosts.md", "| architecture | published file")
    assert sorted(rows) == sorted(ARCHITECTURES)
    for architecture, cells in rows.items():
        assert said_to_run(cells[-1]) == runs_on(architecture), architecture
        assert said_refused(cells[-1]) == set(VARIANTS) - runs_on(architecture), architecture


def test_the_variant_table_lists_every_built_in_variant_with_its_adapters():
    rows = table(ROOT / "docs" / "adapters.md", "| variant | adapters |")
    assert sorted(rows) == VARIANTS
    for name, cells in rows.items():
        variant = resolve_variant(name)
        listed = re.findall(r"`([^`]+)`", cells[1])
        adapters = [a.strip() for a in listed[0].split(",")] if listed and variant.adapters else []
        assert sorted(adapters) == sorted(variant.adapters), name
        assert ("closed: true" in cells[1]) == variant.closed, name


def test_the_readme_headline_has_every_shipped_host_and_refuses_only_what_the_registry_refuses():
    rows = table(ROOT / "README.md", "| variant | `")
    header = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| variant | `"))
    hosts = re.findall(r"`(\w+)` mean", header)
    assert sorted(hosts) == sorted(SHIPPED_HOSTS)
    for variant in set(rows) & set(VARIANTS):
        for host, cell in zip(hosts, rows[variant][1:], strict=True):
            refused = variant not in runs_on(architecture_name(get_path(host)))
            assert cell.startswith("refused") == refused, (variant, host)


@pytest.mark.parametrize("path", [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"], ids=lambda p: p.name)
def test_every_list_of_the_shipped_hosts_names_them_all(path):
    """A parenthesised list of shipped hosts (`(`tiny_v3`, `tiny_v2`, ...)`) names every one."""
    for listed in re.findall(r"\((`tiny_\w+`(?:, `tiny_\w+`)+)\)", path.read_text()):
        assert sorted(re.findall(r"`(\w+)`", listed)) == sorted(SHIPPED_HOSTS), f"{path.name}: ({listed})"


def test_the_sweeps_configuration_table_lists_every_host_option():
    rows = table(ROOT / "docs" / "sweep.md", "| key | default |")
    options = {path.stem for path in (ROOT / "configs" / "host").glob("*.yaml")}
    assert set(re.findall(r"`(\w+)`", rows["host"][2])) == options


def test_the_refusal_and_the_variant_file_name_every_architecture_o_closed_closes():
    closable = [name for name, spec in ARCHITECTURES.items() if spec.closed_wrapper is not None]
    refusals = {spec.closed_refusal for spec in ARCHITECTURES.values() if spec.closed_wrapper is None}
    comment = (ROOT / "retrofit" / "configs" / "variant" / "o_closed.yaml").read_text()
    assert closable and refusals
    for text in (*refusals, comment):
        assert all(re.search(rf"\b{name}\b", text) for name in closable), text
