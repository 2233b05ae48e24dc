"""The O-closure audit of one fitted host: per variant and null-row count, L-inf changes.

For each variant the retrofitted clone predicts `X_test` twice: once recording (reference) and
once with `k` null rows inserted into its in-context stage. Rows of `results/audit.csv`: the L-inf
change of the old rows' hidden states after every in-context block, the L-inf change of the test
predictions, and the first module that re-activated a null carrier.
"""

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from tabpfn import TabPFNRegressor

from retrofit.audit.null_rows import NullRows, first_leaking_module
from retrofit.hosts import make_regressor
from retrofit.patching import retrofit

COLUMNS = (
    "host", "variant", "n_null", "block", "linf_hidden", "linf_pred", "max_abs_hidden", "max_abs_pred", "first_leaking_module"
)
"""`linf_*`: largest change of an old row's state / a prediction when nulls are inserted;
`max_abs_*`: the largest magnitude of those states / predictions without nulls (the scale that
float32 rounding is relative to)."""


def audit_host(
    host: str,
    regressor: TabPFNRegressor,
    X_test: np.ndarray,
    variants: dict[str, dict],
    n_nulls: list[int],
    seed: int = 0,
) -> list[dict]:
    """Audit rows (see `COLUMNS`) of the fitted `regressor` for every variant and null count.

    `variants`: label -> `{"variant": name or spec, **hparams}` passed to `retrofit`.
    """
    rows = []
    for label, setting in variants.items():
        setting = dict(setting)
        patched = retrofit(regressor, setting.pop("variant"), **setting)
        with NullRows(patched, 0) as reference:
            pred_ref = patched.predict(X_test)
        for k in n_nulls:
            with NullRows(patched, k, seed=seed) as inserted:
                pred = patched.predict(X_test)
            leak = first_leaking_module(inserted, reference)
            linf_pred, scale_pred = float(np.max(np.abs(pred - pred_ref))), float(np.max(np.abs(pred_ref)))
            for block, states in reference.states.items():
                linf = max(float((a - b).abs().max()) for a, b in zip(states, inserted.states[block], strict=True))
                scale = max(float(a.abs().max()) for a in states)
                values = (host, label, k, block, linf, linf_pred, scale, scale_pred, leak)
                rows.append(dict(zip(COLUMNS, values, strict=True)))
    return rows


def audit_table(
    hosts: dict[str, Path],
    variants: dict[str, dict],
    n_nulls: list[int],
    *,
    n_estimators: int,
    random_state: int,
    seed: int,
) -> pd.DataFrame:
    """The audit over `hosts` (name -> checkpoint) on sklearn's diabetes data, 70/30 split by `seed`.

    Regressors run in float32 (tabpfn's "auto" precision is bfloat16 autocast on CPUs with native
    bf16, whose rounding would swamp the rounding-level figures this audit is about).
    """
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.3, random_state=seed)
    rows = []
    for name, path in hosts.items():
        regressor = make_regressor(
            path, n_estimators=n_estimators, random_state=random_state
        )
        regressor.fit(X_train, y_train)
        rows += audit_host(name, regressor, X_test, variants, n_nulls, seed=seed)
    return pd.DataFrame(rows, columns=list(COLUMNS))
