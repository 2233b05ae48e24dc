"""Side-by-side timing: interleaved, repeated rounds after a warm-up; ratios per round.

On a shared machine one timing per method is noise. `interleaved_times` runs every callable
once per round, rotating the order each round (A B C, B C A, ...), after one warm-up call each;
`paired_ratios` divides a method's time by the reference's time in the same round, so slow
phases of the machine hit both sides of each ratio. Quote the median ratio and its spread.
"""

import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import torch


def interleaved_times(
    fns: Mapping[str, Callable[[], object]],
    rounds: int | Callable[[float], int],
    clock: Callable[[], float] = time.perf_counter,
    *,
    warmup: bool = True,
) -> dict[str, list[float]]:
    """Seconds per call of each of `fns`, `rounds` rotated rounds after one warm-up call each.

    `rounds` may be a function of the first round's total time (to fit a time budget).
    `clock`: `time.perf_counter` (wall) or `time.thread_time` (this thread's CPU time).
    `warmup=False` skips the warm-up calls (callables that are warm already, or so long that
    their first-call overhead is noise).
    """
    names = list(fns)
    for fn in fns.values() if warmup else ():
        fn()
    times: dict[str, list[float]] = {name: [] for name in names}
    n_rounds, r = (rounds if isinstance(rounds, int) else 1), 0
    while r < n_rounds:
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = clock()
            fns[name]()
            times[name].append(clock() - start)
        if r == 0 and not isinstance(rounds, int):
            n_rounds = rounds(sum(t[0] for t in times.values()))
        r += 1
    return times


def paired_ratios(times: Mapping[str, list[float]], reference: str) -> dict[str, list[float]]:
    """Per method, its time / the `reference`'s time in the same round (one ratio per round)."""
    return {name: [t / t_ref for t, t_ref in zip(ts, times[reference], strict=True)] for name, ts in times.items()}


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max) of `values`."""
    return statistics.median(values), min(values), max(values)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with `torch.set_num_threads(n)`, then restore the previous count."""
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
