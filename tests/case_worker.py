"""A separate process running runner cases into one unit store (the concurrent-writer tests start two).

    python tests/case_worker.py <host checkpoint> <runs_dir> <datasets, comma-separated> <seeds> <n_estimators>

Each dataset × seed (datasets outer) is one `Case` on the repository's dataset config, labelled
host `random_v3`, with the units baseline and oa_only, run by `retrofit.runner.case.run_case`.
"""

import sys
from pathlib import Path

import yaml

from retrofit.data import DatasetSpec
from retrofit.runner.case import Case, UnitSpec, run_case

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def main(host: str, runs: str, datasets: str, seeds: str, n_estimators: str) -> None:
    units = (UnitSpec("baseline"), UnitSpec("oa_only"))
    for name in datasets.split(","):
        spec = DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{name}.yaml").read_text()))
        for seed in seeds.split(","):
            case = Case(
                spec,
                int(seed),
                Path(host),
                Path("."),
                host="random_v3",
                units=units,
                runs_dir=Path(runs),
                n_estimators=int(n_estimators),
            )
            run_case(case)


if __name__ == "__main__":
    main(*sys.argv[1:])
