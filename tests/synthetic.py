"""Synthetic tables the tests share (imported by the test modules; pytest puts tests/ on the path)."""

import numpy as np


def regression_data(seed: int = 0, n: int = 90, f: int = 4, *, curved: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`n` rows of `f` standard-normal features and a target `X0 + sin(2 X1)` (`curved`) or
    `X0 - 0.5 X1`, plus noise of standard deviation 0.1; drawn from `numpy.random.default_rng(seed)`."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    signal = X[:, 0] + np.sin(2 * X[:, 1]) if curved else X[:, 0] - 0.5 * X[:, 1]
    return X, signal + 0.1 * rng.normal(size=n)
