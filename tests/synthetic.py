"""The tables the tests share: synthetic ones, fits on them, and one real split (imported by the test
modules; pytest puts tests/ on the path)."""

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def regression_data(seed: int = 0, n: int = 90, f: int = 4, *, curved: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`n` rows of `f` standard-normal features and a target `X0 + sin(2 X1)` (`curved`) or
    `X0 - 0.5 X1`, plus noise of standard deviation 0.1; drawn from `numpy.random.default_rng(seed)`."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    signal = X[:, 0] + np.sin(2 * X[:, 1]) if curved else X[:, 0] - 0.5 * X[:, 1]
    return X, signal + 0.1 * rng.normal(size=n)


def small_regression_data() -> tuple[np.ndarray, np.ndarray]:
    """`regression_data(n=60, f=3, curved=False)`: the small straight-line table the refusal tests fit
    (its first 40 rows the training rows, the other 20 the test rows)."""
    return regression_data(n=60, f=3, curved=False)


def houses(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A small table with a text column and a numeric code, its target `price` a curve of both."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"area": rng.normal(size=n), "rooms": rng.integers(1, 5, size=n), "zone": rng.choice(["a", "b", "c"], size=n)}
    )
    return frame.assign(price=2 * frame.area + frame.rooms**0.5 + (frame.zone == "a") + 0.1 * rng.normal(size=n))


def csv_rows(n: int = 30) -> list[str]:
    """`n` CSV lines of three numbers, the last two equal (seeded)."""
    rng = np.random.default_rng(0)
    return [f"{a:.3f},{b:.3f},{b:.3f}" for a, b in rng.normal(size=(n, 2))]


def csv_spec(tmp_path: Path, text: str, **spec: Any) -> Any:
    """`text` written to `tmp_path/table.csv` and `toy_spec` of that file with `spec`."""
    path = tmp_path / "table.csv"
    path.write_text(text)
    return toy_spec(path, **spec)


def toy_spec(path: Path | str, **extra: Any) -> Any:
    """The `DatasetSpec` of the CSV file at `path`, named `toy`, target `y`, plus `extra` keys."""
    from retrofit.data import DatasetSpec

    return DatasetSpec.from_mapping({"name": "toy", "source": "csv", "path": str(path), "target": "y", **extra})


def toy_frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """`n` rows: a number `x`, a text `colour`, an integer `code` and the target `y` (seeded)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "colour": rng.choice(["red", "green", "blue"], size=n),
            "code": rng.integers(0, 3, size=n),
            "y": rng.normal(size=n),
        }
    )


def write_csv(tmp_path: Path, frame: pd.DataFrame) -> Path:
    """`frame` written to `tmp_path/toy.csv` without its index; the file's path."""
    path = tmp_path / "toy.csv"
    frame.to_csv(path, index=False)
    return path


def fit_synthetic(
    path: Path,
    *,
    n: int = 90,
    n_train: int = 60,
    f: int = 4,
    seed: int = 0,
    n_estimators: int = 1,
    curved: bool = True,
    **overrides: Any,
) -> tuple[Any, np.ndarray]:
    """A `retrofit.hosts.make_regressor(path, n_estimators=..., random_state=seed, **overrides)`
    fitted on the first `n_train` rows of `regression_data(seed, n, f, curved=curved)`, and the
    features of the other rows (the test rows)."""
    from retrofit.hosts import make_regressor

    X, y = regression_data(seed, n, f, curved=curved)
    regressor = make_regressor(path, n_estimators=n_estimators, random_state=seed, **overrides)
    return regressor.fit(X[:n_train], y[:n_train]), X[n_train:]


def frozen_stock(regressor: Any) -> Any:
    """The stock regressor with frozen parameters: tabpfn picks other CPU kernels for frozen
    weights (1e-7-level differences), so 'stock' means frozen, like every retrofitted clone."""
    import copy

    stock = copy.deepcopy(regressor)
    for model in stock.models_:
        model.requires_grad_(False)
    return stock


def diabetes_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, X_test, y_train, y_test): scikit-learn's diabetes table (it ships with the package)
    split 70/30 by `train_test_split(random_state=0)`, the real table the trained-host tests share."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    return tuple(train_test_split(X, y, test_size=0.3, random_state=0))
