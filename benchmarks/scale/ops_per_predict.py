"""The scale check's operation counts: torch operations one predict dispatches, stock and retrofitted."""

from typing import Any

from tabpfn import TabPFNRegressor

from benchmarks.tools.op_count import dispatched_ops


def ops_per_predict(models: dict[str, TabPFNRegressor], X_test: Any) -> dict[str, int]:
    """name -> the aten operations one `predict(X_test)` of that model dispatches (after one
    warm-up predict each, which the timing has already run; counted on whatever device the models
    are on: the count is the same on every device)."""
    return {name: dispatched_ops(lambda m=model: m.predict(X_test)).total() for name, model in models.items()}
