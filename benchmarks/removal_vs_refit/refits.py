"""The references of the explanation benchmark (`benchmarks.removal_vs_refit`): shapiq's TabPFN imputer, a
refit of the regressor per coalition, and a refit without each training row for leave-one-out."""

from collections.abc import Callable

import numpy as np
import shapiq
from tabpfn import TabPFNRegressor

INDICES = {"SV": 1, "k-SII": 2}
"""Explanation index -> the max_order it runs with."""


def refit_shapiq(
    model: TabPFNRegressor,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_explain: np.ndarray,
    empty_prediction: float,
    budget: int | None,
    random_state: int,
    indices: tuple[str, ...] = ("SV",),
) -> dict[str, np.ndarray]:
    """index -> (n_explain, values) from shapiq's own TabPFN imputer: a refit of `model` on the
    coalition's columns for every coalition of every row (exact: one ExactComputer per row serves
    every index; else KernelSHAP / KernelSHAP-IQ as `explain`)."""
    d = X_train.shape[1]
    imputer = shapiq.TabPFNImputer(
        model,
        X_train,
        y_train,
        empty_prediction=empty_prediction,
        predict_function=lambda fitted, x: fitted.predict(x)[0],  # one row: the imputer takes a scalar
    )
    rows: dict[str, list[np.ndarray]] = {index: [] for index in indices}
    for x in X_explain:
        imputer.fit(x[None])
        computer = shapiq.ExactComputer(imputer, d) if budget is None else None
        for index in indices:
            if computer is not None:
                result = computer(index, INDICES[index])
            elif index == "SV":
                result = shapiq.KernelSHAP(d, random_state=random_state).approximate(budget, imputer)
            else:
                approximator = shapiq.KernelSHAPIQ(d, max_order=INDICES[index], index=index, random_state=random_state)
                result = approximator.approximate(budget, imputer)
            rows[index].append(as_array([result], d)[0])
    return {index: np.stack(found) for index, found in rows.items()}


def refit_leave_one_out(
    fresh: Callable[[], TabPFNRegressor],
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_query: np.ndarray,
    y_query: np.ndarray,
) -> np.ndarray:
    """(n_train,) leave-one-out values by refitting: the mean squared error on (X_query, y_query)
    of a regressor fitted without each training row minus that of one fitted on all rows."""

    def loss(keep: np.ndarray) -> float:
        prediction = fresh().fit(X_train[keep], y_train[keep]).predict(X_query)
        return float(((prediction - y_query) ** 2).mean())

    without_NN = ~np.eye(len(X_train), dtype=bool)  # row i: every training row but i
    full = loss(np.ones(len(X_train), dtype=bool))
    return np.array([loss(keep) - full for keep in without_NN])


def as_array(result: np.ndarray | list[shapiq.InteractionValues], d: int) -> np.ndarray:
    """Attributions (rows, values): Shapley values as they are, interactions as the values of
    order 1 (d) followed by order 2 (the d(d-1)/2 pairs i < j)."""
    if isinstance(result, np.ndarray):
        return result
    upper = np.triu_indices(d, 1)
    orders = [
        [item.get_n_order_values(1)] + ([item.get_n_order_values(2)[upper]] if item.max_order > 1 else [])
        for item in result
    ]
    return np.stack([np.concatenate(values_of_row) for values_of_row in orders])
