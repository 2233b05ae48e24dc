"""The tables the tests share: synthetic ones, fits on them, one real split, and the settings that
the removal, audit and pretraining tests share (imported by the test modules; pytest puts tests/ on
the path)."""

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


REMOVAL_REL_BOUND = 1e-5
"""Without compaction, removal matches its reference to this fraction of the prediction scale."""
N_TRAIN, N_TEST, N_FEATURES = 60, 6, 5
FIXED_ORDER = {"FEATURE_SHIFT_METHOD": None}
"""Feature removal refuses feature shuffling (each member's column order is drawn for the feature count)."""
COALITIONS = np.array([[1, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
"""The feature coalitions the removal tests evaluate (the full and the empty one among them)."""


def removal_table(seed=0):
    """(X_train, y_train, X_test, y_test): N_TRAIN + N_TEST rows of N_FEATURES standard-normal
    features with a curved, interacting target (the removal tests' table)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_TRAIN + N_TEST, N_FEATURES))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=len(X))
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


CATEGORICAL = [3, 4]
"""The columns of `categorical_table` that are categories."""


def categorical_table(seed=0):
    """`removal_table` with its last two features (`CATEGORICAL`) cut at ±0.4 into three categories
    of about a third of the rows each: common enough for every ordinal encoding to encode them."""
    X_train, y_train, X_test, y_test = removal_table(seed)
    X_train, X_test = X_train.copy(), X_test.copy()
    for X in (X_train, X_test):
        X[:, CATEGORICAL] = (X[:, CATEGORICAL] > -0.4).astype(float) + (X[:, CATEGORICAL] > 0.4)
    return X_train, y_train, X_test, y_test


def closed_fit(path, X_train, y_train, compact=False, **config):
    """The o_closed retrofit of a 2-member regressor on `path` fitted on (X_train, y_train), with the
    inference config entries `config` over the host's stored preset without feature shuffling."""
    import retrofit
    from retrofit.hosts import make_regressor

    fitted = make_regressor(path, n_estimators=2, random_state=0, inference_config={**FIXED_ORDER, **config})
    return retrofit.retrofit(fitted.fit(X_train, y_train), "o_closed", compact=compact)


def removal_close(a, b, scale, compact):
    """Bitwise equal with `compact`, else within REMOVAL_REL_BOUND of `scale`."""
    if compact:
        return np.array_equal(a, b)
    return float(np.abs(a - b).max()) <= REMOVAL_REL_BOUND * scale


AUDIT_VARIANTS = {
    "baseline": {"variant": "baseline"},
    "full_o": {"variant": "full_o"},
    "full_o_compact": {"variant": "full_o", "compact": True},
    "o_closed": {"variant": "o_closed"},
    "o_closed_compact": {"variant": "o_closed", "compact": True},
}
"""The variants the audit tests measure (`retrofit.audit.audit_host`'s `variants`)."""


def audit_rows(rows, variant, at=None, kind=None):
    """The audit rows of `variant`, of insertion place `at` and null kind `kind` when given."""
    return [
        r for r in rows if r["variant"] == variant and at in (None, r["inserted_at"]) and kind in (None, r["null_kind"])
    ]


CURRICULUM = [
    {"from_step": 0, "buckets": [{"rows": [40, 60], "features": [1, 3], "batch_size": 16}]},
    {"from_step": 3, "buckets": [{"rows": [60, 80], "features": [2, 4], "batch_size": 8}]},
]
"""The pretraining tests' curriculum: two stages, the second from step 3."""


def pretrain_config(tmp_path: Path, arch_name: str = "tabpfn_v2", **kw: Any) -> Any:
    """A `PretrainConfig` of a tiny `arch_name` host run in `tmp_path / "run"` on CURRICULUM (no timed
    evaluation or checkpoint), with the fields `kw` over those."""
    from retrofit.hosts.random_host import TINY_ARCHS
    from retrofit.pretrain.pretrain_config import PretrainConfig

    defaults = dict(
        host_name="test_host",
        arch_name=arch_name,
        arch=dict(TINY_ARCHS[arch_name]),
        run_dir=str(tmp_path / "run"),
        curriculum=CURRICULUM,
        border_samples=5000,
        eval_every_s=1e9,
        checkpoint_every_s=1e9,
        val={"small": {"seed": 1, "n_batches": 2, "batch_size": 16, "rows": [40, 60], "features": [1, 3]}},
    )
    defaults.update(kw)
    return PretrainConfig(**defaults)


CASE_VARIANTS = ("baseline", "oa_only", "full_o")
"""The units of conftest's `case_on` (a carseats case, one member)."""
