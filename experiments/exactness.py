"""OAttention exactness vs the float64 reference -> results/exactness.csv (`make exactness`;
`configs/exactness.yaml`, `benchmarks.attention_exactness`).

A progress bar over the (shape, score_std, dtype) grid; `exactness_table` draws each grid point's
inputs from `seed` afresh, so measuring one point at a time gives the same rows as the whole grid.
"""

import itertools
from dataclasses import dataclass

from omegaconf import MISSING
from tqdm.auto import tqdm

from retrofit.io import write_atomic
from retrofit.jobs import launch
from retrofit.jobs.start import JobStart


@dataclass
class ShapeConfig:
    """One attention input shape: batch `B`, heads `H`, queries `Q`, keys `K`, head width `D`."""

    B: int = MISSING
    H: int = MISSING
    Q: int = MISSING
    K: int = MISSING
    D: int = MISSING


@dataclass
class ExactnessConfig:
    """The schema of `configs/exactness.yaml` (each key's role is written there)."""

    output_csv: str = MISSING
    seed: int = MISSING
    dtypes: list[str] = MISSING
    score_stds: list[float] = MISSING
    null_fraction: float = MISSING
    insert_fraction: float = MISSING
    shapes: list[ShapeConfig] = MISSING
    device: str = MISSING


SCHEMA = ExactnessConfig


def run(job: JobStart) -> None:
    """Measure every grid point of `job`, write the table atomically and print it."""
    import pandas as pd

    from benchmarks.attention_exactness import Shape, exactness_table

    settings: ExactnessConfig = job.settings
    (path,) = job.outputs(settings.output_csv)
    shapes = [Shape(**vars(shape)) for shape in settings.shapes]
    grid = list(itertools.product(shapes, settings.score_stds, settings.dtypes))
    parts = []
    with tqdm(grid, desc="exactness", unit="input") as bar:
        for shape, score_std, dtype in bar:
            bar.set_description_str(
                f"exactness B={shape.B} H={shape.H} Q={shape.Q} K={shape.K} std={score_std:g} {dtype}"
            )
            parts.append(
                exactness_table(
                    shapes=[shape],
                    score_stds=[score_std],
                    dtypes=[dtype],
                    null_fraction=settings.null_fraction,
                    insert_fraction=settings.insert_fraction,
                    seed=settings.seed,
                    device=job.device,
                )
            )
    table = pd.concat(parts, ignore_index=True)
    write_atomic(path, lambda tmp: table.to_csv(tmp, index=False, float_format="%.6g"))
    print(table.to_string(index=False, float_format="%.3g"))
    print(f"wrote {path}")


if __name__ == "__main__":
    launch("exactness")
