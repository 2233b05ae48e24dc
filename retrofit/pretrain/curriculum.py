"""Curriculum: which table shapes a step draws, as data.

A curriculum is a list of stages, each active from `from_step` on, holding a weighted mixture of
shape buckets; a bucket names its row and feature ranges and its batch size (larger tables use
fewer datasets per step so a step costs about the same). Mixing small tables into later stages
keeps small-table skill from drifting down.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from retrofit.prior import TableShape, sample_shape


@dataclass(frozen=True)
class ShapeBucket:
    rows: tuple[int, int]
    features: tuple[int, int]
    batch_size: int
    weight: float = 1.0


@dataclass(frozen=True)
class Stage:
    from_step: int
    buckets: tuple[ShapeBucket, ...]


def parse_curriculum(stages: Sequence[dict]) -> tuple[Stage, ...]:
    """Stages from plain config data; checked: starts at step 0, increasing, positive weights."""
    parsed = tuple(
        Stage(
            from_step=int(s["from_step"]),
            buckets=tuple(
                ShapeBucket(
                    rows=(int(b["rows"][0]), int(b["rows"][1])),
                    features=(int(b["features"][0]), int(b["features"][1])),
                    batch_size=int(b["batch_size"]),
                    weight=float(b.get("weight", 1.0)),
                )
                for b in s["buckets"]
            ),
        )
        for s in stages
    )
    starts = [s.from_step for s in parsed]
    if not parsed or starts[0] != 0 or starts != sorted(set(starts)):
        raise ValueError(f"curriculum stages must start at step 0 and increase strictly; got {starts}")
    if any(b.weight <= 0 or b.batch_size < 1 for s in parsed for b in s.buckets):
        raise ValueError("curriculum bucket weights and batch sizes must be positive")
    return parsed


def draw_shape(curriculum: Sequence[Stage], step: int, g: torch.Generator) -> tuple[TableShape, int]:
    """The table shape and batch size for `step`, drawn from the active stage's mixture."""
    stage = [s for s in curriculum if s.from_step <= step][-1]
    weights = torch.tensor([b.weight for b in stage.buckets])
    bucket = stage.buckets[int(torch.multinomial(weights, 1, generator=g))]
    return sample_shape(g, bucket.rows, bucket.features), bucket.batch_size
