"""Curriculum: which table shapes a step draws, as data.

A curriculum is a list of stages, each active from `from_step` on, holding a weighted mixture of
shape buckets; a bucket names its row and feature ranges and its batch size (larger tables use
fewer datasets per step so a step costs about the same). Mixing small tables into later stages
keeps small-table skill from drifting down.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import MISSING

from retrofit.errors import RetrofitError
from retrofit.prior import TableShape, sample_shape
from retrofit.typed import typed_object


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


@dataclass
class BucketConfig:
    """The schema of one bucket as written in a curriculum: `rows` and `features` as [low, high]."""

    rows: list[int] = MISSING
    features: list[int] = MISSING
    batch_size: int = MISSING
    weight: float = 1.0


@dataclass
class StageConfig:
    """The schema of one curriculum stage as written in `configs/pretrain/`."""

    from_step: int = MISSING
    buckets: list[BucketConfig] = MISSING


def parse_curriculum(stages: Sequence[Any]) -> tuple[Stage, ...]:
    """Stages from config data, each typed by `StageConfig` (an unknown or missing key, or a value of
    the wrong type, is refused naming it); checked: starts at step 0, increasing, [low, high] ranges,
    positive weights and batch sizes. RetrofitError otherwise."""
    typed_stages = [typed_object(StageConfig, stage, f"curriculum stage {i}") for i, stage in enumerate(stages)]
    parsed = tuple(
        Stage(
            from_step=stage.from_step,
            buckets=tuple(
                ShapeBucket(_range(b.rows, "rows"), _range(b.features, "features"), b.batch_size, b.weight)
                for b in stage.buckets
            ),
        )
        for stage in typed_stages
    )
    starts = [s.from_step for s in parsed]
    if not parsed or starts[0] != 0 or starts != sorted(set(starts)):
        raise RetrofitError(f"curriculum stages must start at step 0 and increase strictly; got {starts}")
    if any(b.weight <= 0 or b.batch_size < 1 for s in parsed for b in s.buckets):
        raise RetrofitError("curriculum bucket weights and batch sizes must be positive")
    return parsed


def _range(bounds: list[int], key: str) -> tuple[int, int]:
    """A bucket's [low, high] as a pair; RetrofitError naming `key` for anything else."""
    if len(bounds) != 2 or not 1 <= bounds[0] <= bounds[1]:
        raise RetrofitError(f"curriculum bucket {key} must be [low, high] with 1 <= low <= high, got {bounds}")
    return bounds[0], bounds[1]


def draw_shape(curriculum: Sequence[Stage], step: int, g: torch.Generator) -> tuple[TableShape, int]:
    """The table shape and batch size for `step`, drawn from the active stage's mixture."""
    stage = [s for s in curriculum if s.from_step <= step][-1]
    weights = torch.tensor([b.weight for b in stage.buckets])
    bucket = stage.buckets[int(torch.multinomial(weights, 1, generator=g))]
    return sample_shape(g, bucket.rows, bucket.features), bucket.batch_size
