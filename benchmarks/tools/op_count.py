"""How many torch operations a call dispatches: a device-independent proxy for kernel launches.

On a GPU a small model's predict is bound by how many kernels it launches, not by arithmetic;
the count of aten operators dispatched below autograd is the same on every machine and device
(the same Python code dispatches the same operators), so CI can hold it without a GPU.
"""

from collections import Counter
from collections.abc import Callable
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class _OpCounter(TorchDispatchMode):
    """Counts every aten operator dispatched while active, by name (`aten.mm.default` ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


def dispatched_ops(fn: Callable[[], Any]) -> Counter[str]:
    """aten operator name -> how many times one call of `fn` dispatched it (its total: `.total()`).

    Counts below autograd, so views and in-place ops count and composite ops count as what they
    decompose into; a count of a deterministic `fn` is exact and the same on every run.
    """
    with _OpCounter() as counter:
        fn()
    return counter.counts
