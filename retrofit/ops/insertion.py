"""Null-token insertion: spread an old sequence into a longer one with inserted slots.

The one implementation of "insert null tokens" that the operator tests, the measurements and the
audit use. A keep mask (bool, True at the old tokens, False at the inserted slots) says where the
slots go: `keep_mask` at given positions, `random_keep_mask` at positions drawn from a generator;
`insert_rows` spreads a tensor's axis over the mask's True slots.
"""

from collections.abc import Sequence

import torch


def keep_mask(n_old: int, positions: Sequence[int]) -> torch.Tensor:
    """Bool (n_old + len(positions),), False at inserted slots.

    `positions` are old indices in [0, n_old]; each inserts one slot before that old token
    (n_old appends); repeats insert several slots at one place.
    """
    if any(not 0 <= pos <= n_old for pos in positions):
        raise ValueError(f"insertion positions must lie in [0, {n_old}], got {list(positions)}")
    keep_L = torch.ones(n_old + len(positions), dtype=torch.bool)
    keep_L[[pos + i for i, pos in enumerate(sorted(positions))]] = False
    return keep_L


def random_keep_mask(n_old: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """Bool (n_old + k,), False at k slots drawn uniformly without replacement from `generator`
    (the first k entries of one `torch.randperm(n_old + k)`)."""
    keep_L = torch.ones(n_old + k, dtype=torch.bool)
    keep_L[torch.randperm(n_old + k, generator=generator)[:k]] = False
    return keep_L


def insert_rows(x: torch.Tensor, keep_L: torch.Tensor, dim: int, fill: float = 0.0) -> torch.Tensor:
    """x with its axis `dim` spread over the True slots of `keep_L`; inserted slots hold `fill`."""
    shape = list(x.shape)
    shape[dim] = keep_L.numel()
    return x.new_full(shape, fill).index_copy(dim, keep_L.nonzero().squeeze(1).to(x.device), x)
