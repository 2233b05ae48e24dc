"""O-closed token dynamics retrofitted into frozen TabPFN regressors.

`retrofit.retrofit(regressor, variant, **hparams)` patches a frozen clone and
`retrofit.unpatch(patched)` restores it (both in `retrofit.patching`);
`retrofit.RetrofitRegressor` is a variant on a host as a scikit-learn estimator
(`retrofit.estimator`); `retrofit.predict_many(pairs)` predicts several o_closed regressors' tables
in padded batches (`retrofit.batching`); `retrofit.compare(X, y, variants=[...])` runs the
sweep's matched comparison on a table in memory and returns its rows (`retrofit.comparison`);
`retrofit.explain(X, y, rows=[...])` splits rows' predictions among their features by removal in
an o_closed host (`retrofit.explanation`).
They are resolved on first access, so `import retrofit.ops` does not pay for importing tabpfn.
"""

from importlib import import_module

_LAZY = {
    "retrofit": "retrofit.patching",
    "unpatch": "retrofit.patching",
    "RetrofitRegressor": "retrofit.estimator",
    "predict_many": "retrofit.batching",
    "compare": "retrofit.comparison",
    "explain": "retrofit.explanation",
}
"""Public name -> the module defining it, imported on first access."""

__all__ = ["RetrofitRegressor", "compare", "explain", "predict_many", "retrofit", "unpatch"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'retrofit' has no attribute {name!r}")
