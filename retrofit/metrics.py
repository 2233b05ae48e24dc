"""Prediction metrics shared by the sweep and the host-quality bar."""

import numpy as np


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error of `y_pred` against `y_true` (same length), in float64."""
    diff = np.asarray(y_true, dtype="float64") - np.asarray(y_pred, dtype="float64")
    return float(np.sqrt(np.mean(diff**2)))
