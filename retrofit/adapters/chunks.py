"""tabpfn's memory-saving chunks for the O wrappers.

With memory saving on (`memory_saving_mode`, forced or automatic), tabpfn passes its models a
`save_peak_memory_factor` and evaluates per-token and per-column work in that many chunks along
the flattened batch axes, writing each chunk's result into the input in place
(`tabpfn.architectures.shared.chunked_evaluate.chunked_evaluate_maybe_inplace`): the large
intermediates (an MLP's hidden layer, an attention's projections) exist for one chunk at a
time. The O wrappers split the same axes into the same number of chunks with `chunk_slices`
and write back with `replace_in_chunks`. Work on a chunk sees only that
chunk's items, so every item's result is computed from the same inputs as unchunked: the values
agree up to the rounding of a smaller batch. tabpfn's chunked inference of the stages before the
in-context blocks (chunks of rows and columns, sized by the model) starts a pass again with half
its chunk after running out of GPU memory: `halving_after_oom`.
"""

from collections.abc import Callable
from typing import TypeVar

import torch
from tabpfn.errors import is_oom_error

T = TypeVar("T")


def chunk_slices(n: int, factor: int | None) -> list[slice]:
    """The chunks of `n` items tabpfn makes with `factor` (`ceil(n / factor)` items each, the last
    one shorter); one chunk of everything when `factor` is None."""
    size = n if factor is None else max(1, -(-n // factor))
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def replace_in_chunks(
    fn: Callable[..., torch.Tensor], factor: int | None, x_N: torch.Tensor, *others_N: torch.Tensor
) -> torch.Tensor:
    """`fn(x, *others)` as `x[c] = fn(x[c], *(o[c] for o in others))` for each chunk `c` of axis 0
    (`chunk_slices`), in place into `x`, which the caller owns (nobody else reads it), so only one
    chunk's result and intermediates are held beside `x`. `fn` maps items to items (the result of
    an item depends on that item's entries alone). Without `factor`: `fn(x, *others)` itself."""
    if factor is None:
        return fn(x_N, *others_N)
    for chunk in chunk_slices(x_N.shape[0], factor):
        x_N[chunk] = fn(x_N[chunk], *(o[chunk] for o in others_N))
    return x_N


def per_token_in_chunks(
    fn: Callable[..., torch.Tensor], factor: int | None, x_xE: torch.Tensor, p_x: torch.Tensor | None = None
) -> torch.Tensor:
    """`fn(x, p)` (or `fn(x)` when `p_x` is None) for a per-token map `fn` of carriers (..., E) and
    their presences (...), in `factor` chunks of all leading axes flattened (tabpfn's chunks of
    an MLP), written into `x`'s flattened copy or view; `fn(x, p)` itself without `factor`."""
    if factor is None:
        return fn(x_xE) if p_x is None else fn(x_xE, p_x)
    flat = (x_xE.flatten(0, -2),) if p_x is None else (x_xE.flatten(0, -2), p_x.flatten())
    return replace_in_chunks(fn, factor, *flat).view(x_xE.shape)


def halving_after_oom(run: Callable[[int], T], size: int, keep: Callable[[int], None]) -> T:
    """`run(size)`; after a GPU out-of-memory error (tabpfn's `is_oom_error`), `run` again from the
    start with half the chunk size, down to 1, as tabpfn retries its chunked inference; `keep`
    receives each halved size (tabpfn stores it on the model, so later calls start there). Any
    other error, or running out of memory at size 1, is raised."""
    while True:
        try:
            return run(size)
        except RuntimeError as error:
            if not is_oom_error(error) or size <= 1:
                raise
        torch.cuda.empty_cache()
        size //= 2
        keep(size)
