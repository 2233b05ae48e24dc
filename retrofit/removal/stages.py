"""Where a coalition's time goes: ours per stage of the closed forward, a refit per step.

`closed_stages` times `retrofit.removal.values` on some coalitions with a CPU clock around the
closed model's stages: the column tokens (computed once per distinct column group,
`OClosedTabPFNV3.column_tokens`), the in-context blocks (module hooks), the rest of
`forward_tokens` (column aggregator, label embeddings, readout) and everything outside the
model (member inputs, gathering, decoding). `refit_stages` refits the stock regressor on each
coalition's columns, as shapiq's TabPFNImputer does, and times the fit (tabpfn's preprocessing
fit), the predict outside the model (the members' preprocessing of the query, decoding) and
the model's forward. Both report CPU milliseconds per coalition (`time.process_time`); on a CUDA
regressor, wall milliseconds read after `torch.cuda.synchronize()` (`retrofit.hosts.device.device_clock`).
"""

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit.hosts.device import device_clock
from retrofit.hosts.regressor import resolve_device
from retrofit.removal.features import values

CLOSED_STAGES = ("column tokens", "column aggregator and readout", "in-context blocks", "outside the model", "total")
REFIT_STAGES = ("fit", "predict outside the model", "forward", "total")


class _Clock:
    """Seconds accumulated per stage name, read on the clock of the `device` the timed work runs on
    (`device_clock`: CPU time on the CPU)."""

    def __init__(self, device: str) -> None:
        self.seconds: dict[str, float] = {}
        self.clock = device_clock(device, time.process_time)

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    @contextmanager
    def method(self, owner: Any, name: str, stage: str) -> Iterator[None]:
        """Time every call of `owner.name` (an instance attribute shadows it while inside)."""
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = self.clock()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(stage, self.clock() - start)

        object.__setattr__(owner, name, timed)
        try:
            yield
        finally:
            del owner.__dict__[name]

    @contextmanager
    def modules(self, modules: list[nn.Module], stage: str) -> Iterator[None]:
        """Time every forward of each of `modules` (forward hooks)."""
        starts: list[float] = []

        def before(*_: Any) -> None:
            starts.append(self.clock())

        def after(*_: Any) -> None:
            self.add(stage, self.clock() - starts.pop())

        handles = [h for m in modules for h in (m.register_forward_pre_hook(before), m.register_forward_hook(after))]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()


def closed_stages(closed: TabPFNRegressor, X: np.ndarray, coalitions: np.ndarray) -> dict[str, float]:
    """CPU ms per coalition of `values(closed, X, coalitions)`, per stage (`CLOSED_STAGES`)."""
    model = closed.models_[0]
    clock = _Clock(closed.devices_[0])
    with ExitStack() as stack:
        stack.enter_context(clock.method(model, "column_tokens", "column tokens"))
        stack.enter_context(clock.method(model, "forward_tokens", "forward_tokens"))
        stack.enter_context(clock.modules(list(model.base_layer.icl_blocks), "in-context blocks"))
        start = clock.clock()
        values(closed, X, coalitions)
        total = clock.clock() - start
    s = clock.seconds
    stages = {
        "column tokens": s.get("column tokens", 0.0),
        "column aggregator and readout": s["forward_tokens"] - s["in-context blocks"],
        "in-context blocks": s["in-context blocks"],
    }
    stages["outside the model"] = total - s.get("column tokens", 0.0) - s["forward_tokens"]
    stages["total"] = total
    return {stage: 1000 * seconds / len(coalitions) for stage, seconds in stages.items()}


def refit_stages(
    fresh: Callable[[], TabPFNRegressor],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X: np.ndarray,
    coalitions: np.ndarray,
) -> dict[str, float]:
    """CPU ms per coalition of refitting `fresh()` on each (non-empty) coalition's columns and
    predicting `X`, per step (`REFIT_STAGES`)."""
    clock = _Clock(resolve_device(fresh().device))
    kept = [np.flatnonzero(coalition) for coalition in coalitions if coalition.any()]
    for columns in kept:
        regressor = fresh()
        start = clock.clock()
        regressor.fit(X_train[:, columns], y_train)
        clock.add("fit", clock.clock() - start)
        with clock.modules(list(regressor.models_), "forward"):
            start = clock.clock()
            regressor.predict(X[:, columns])
            clock.add("predict", clock.clock() - start)
    s = clock.seconds
    stages = {"fit": s["fit"], "predict outside the model": s["predict"] - s["forward"], "forward": s["forward"]}
    stages["total"] = s["fit"] + s["predict"]
    return {stage: 1000 * seconds / len(kept) for stage, seconds in stages.items()}
