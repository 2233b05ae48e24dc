"""The measured figures of README.md and docs/*.md, generated from the committed `results/` files:

    python -m retrofit.results.generated_docs          # rewrite every generated region (`make docs`)
    python -m retrofit.results.generated_docs --check  # exit 1 naming each stale region

A document holds a generated region as

    <!-- generated: <name> -->
    ...the table `REGIONS[<name>]` renders from results/...
    <!-- end generated -->

and prose around it names what is measured and links the results file, never the figures: they live
in `results/` (written only by the record targets) and here, rendered by one function per region with
fixed formats, so the same results files give the same text byte for byte.
"""

import re
import sys
from collections.abc import Callable
from pathlib import Path

from retrofit.results import benchmark_figures as bench
from retrofit.results import figure_tables as sweep
from retrofit.results import suite_tables as suite

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs")
"""The files (a folder: its `*.md`) whose generated regions this module keeps current, from the root."""

REGIONS: dict[str, Callable[[Path], str]] = {
    "headline": sweep.headline,
    "retrofit-main": sweep.retrofit_main,
    "retrofit-per-dataset": sweep.retrofit_per_dataset,
    "decomposition": sweep.decomposition,
    "tau-sweep": sweep.tau_sweep,
    "audit": bench.audit,
    "padding-demo": bench.padding_demo,
    "bench-batch": bench.bench_batch,
    "host-quality": bench.host_quality,
    "host-quality-summary": bench.host_quality_summary,
    "preset-selection": bench.preset_selection,
    "extrapolation": bench.extrapolation,
    "noise-floor": bench.noise_floor,
    "suite-summary": suite.suite_summary,
    "suite-deltas": suite.suite_deltas,
    "scale": bench.scale,
    "exactness": bench.exactness,
    "ablation": bench.ablation,
    "removal-bench": bench.removal_bench,
    "removal-stages": bench.removal_stages,
    "removal-scale": bench.removal_scale,
    "sweep-cost": bench.sweep_cost,
}
"""Region name -> the function that renders it from a `results` folder (`retrofit.results.figure_tables`
for the sweep's files, `retrofit.results.benchmark_figures` for the benchmarks')."""

REGION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md under `root`, in a fixed order."""
    paths = []
    for name in DOCUMENTS:
        path = root / name
        paths += sorted(path.glob("*.md")) if path.is_dir() else [path]
    return paths


def region_names(text: str) -> list[str]:
    """The names of `text`'s generated regions, in order."""
    return [match["name"] for match in REGION.finditer(text)]


def regenerate(text: str, results: Path) -> str:
    """`text` with every generated region's body rendered anew from the files under `results`; an
    unknown region name is a KeyError naming it and the known ones."""

    def render(match: re.Match) -> str:
        name = match["name"]
        if name not in REGIONS:
            raise KeyError(
                f"generated region {name!r} is not one of retrofit.results.generated_docs.REGIONS: {sorted(REGIONS)}"
            )
        return f"{match[1]}{REGIONS[name](results)}{match[4]}"

    return REGION.sub(render, text)


def stale(root: Path = ROOT) -> list[str]:
    """`<file>: <region>` of every generated region under `root` that differs from what `root/results` gives."""
    found = []
    for path in documents(root):
        text = path.read_text()
        fresh = regenerate(text, root / "results")
        if fresh != text:
            old, new = REGION.finditer(text), REGION.finditer(fresh)
            found += [f"{path.relative_to(root)}: {a['name']}" for a, b in zip(old, new, strict=True) if a[0] != b[0]]
    return found


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python -m retrofit.results.generated_docs [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        out_of_date = stale()
        for where in out_of_date:
            print(f"stale generated region {where}: run `make docs`", file=sys.stderr)
        return 1 if out_of_date else 0
    for path in documents():
        text = path.read_text()
        fresh = regenerate(text, ROOT / "results")
        if fresh != text:
            path.write_text(fresh)
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
