"""How good is a host at in-context regression? RMSE on real data against simple baselines.

For each dataset x seed (the sweep's own seeded 70/30 split and fit, `retrofit.fitting`), the host
(optionally under several stored-inference-config presets) is compared with
the mean predictor, standardised ridge (CV alpha; one-hot categoricals; mean-imputed NaN), a
random forest (300 trees) and scikit-learn's histogram gradient boosting (its defaults, the
categorical columns declared as such). The bar a shipped host must meet: RMSE <= 0.85 x the mean predictor's
on every dataset, and geometric mean RMSE(host)/RMSE(ridge) <= 1.05.
"""

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyRegressor
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from retrofit.data import Split
from retrofit.fitting import fit_host
from retrofit.hosts import inference_config, make_regressor
from retrofit.hosts.device import device_label
from retrofit.labels import DEVICE_DOC
from retrofit.metrics import rmse

MEAN_RATIO_BAR = 0.85
RIDGE_GEOMEAN_BAR = 1.05
SCORE_DOCS = {
    "dataset": ("label", "dataset name"),
    "seed": ("integer", "split and `random_state` seed"),
    "n_train": ("rows", "training rows of the split"),
    "n_test": ("rows", "test rows of the split"),
    "n_features": ("count", "feature columns"),
    "model": ("label", "a baseline (`mean`, `ridge`, `random_forest`, `gradient_boosting`) or `<host>[<preset>]`"),
    "rmse": ("target units", "root mean squared error on the test rows"),
    "device": DEVICE_DOC,
}
"""Column -> (unit, meaning) of `host_quality.csv` (`score_case`)."""
SUMMARY_DOCS = {
    "model": SCORE_DOCS["model"],
    "worst_rmse_over_mean": ("ratio", "largest over datasets of RMSE / the mean predictor's (seed-averaged)"),
    "worst_dataset": ("label", "the dataset where it is largest"),
    "geomean_rmse_over_ridge": ("ratio", "geometric mean of RMSE / ridge's over dataset × seed"),
    "geomean_rmse_over_rf": ("ratio", "geometric mean of RMSE / the random forest's"),
    "device": DEVICE_DOC,
    "meets_bar": ("flag", "worst_rmse_over_mean ≤ `MEAN_RATIO_BAR` and geomean_rmse_over_ridge ≤ `RIDGE_GEOMEAN_BAR`"),
}
"""Column -> (unit, meaning) of `host_quality_summary.csv` (`summarise`)."""
EXTRAPOLATION_DOCS = {
    "x_z": ("training-x sd", "query x, in training standard deviations from the training mean"),
    "true_y_z": ("training-y z units", "the noiseless trend's y there, standardised by the training y"),
    "pred_y_z": ("training-y z units", "the model's prediction there, standardised the same way"),
    "model": ("label", "`<host>[<preset>]`"),
    "device": DEVICE_DOC,
}
"""Column -> (unit, meaning) of `host_extrapolation.csv` (`extrapolation_probe`, labelled by model)."""


def _ridge(split: Split, seed: int):
    cats = list(split.categorical_indices)
    nums = [i for i in range(split.X_train.shape[1]) if i not in cats]
    encode = ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), nums),
            (
                "cat",
                make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
                cats,
            ),
        ]
    )
    return make_pipeline(encode, RidgeCV(alphas=np.logspace(-3, 3, 13)))


def _gradient_boosting(split: Split, seed: int):
    """`HistGradientBoostingRegressor` with its defaults (early stopping on for more than 10,000
    rows only), the split's ordinal-coded categorical columns declared categorical; NaN native."""
    categorical = list(split.categorical_indices) or None
    return HistGradientBoostingRegressor(categorical_features=categorical, random_state=seed)


BASELINES: dict[str, Callable[[Split, int], object]] = {
    "mean": lambda split, seed: DummyRegressor(strategy="mean"),
    "ridge": _ridge,
    "random_forest": lambda split, seed: RandomForestRegressor(n_estimators=300, random_state=seed, n_jobs=1),
    "gradient_boosting": _gradient_boosting,
}
"""Baseline name -> factory of an unfitted sklearn regressor for a split."""


def preset_overrides(preset: str) -> dict:
    """The `make_regressor` overrides of an inference preset: none for the host's stored inference
    config (`preset="stored"`), else the named preset (`retrofit.hosts.checkpoint.INFERENCE_PRESETS`)."""
    return {} if preset == "stored" else {"inference_config": inference_config(preset)}


def host_regressor(path: Path, preset: str, n_estimators: int, seed: int, **kwargs):
    """The host at `path` as an unfitted `TabPFNRegressor` under `preset` (`preset_overrides`)."""
    return make_regressor(path, n_estimators=n_estimators, random_state=seed, **preset_overrides(preset), **kwargs)


def score_case(
    dataset: str,
    seed: int,
    split: Split,
    hosts: Mapping[str, Path],
    presets: Sequence[str],
    n_estimators: int,
    device: str = "cpu",
) -> list[dict]:
    """RMSE rows (`model` = baseline name or `<host>[<preset>]`) for one dataset x seed; the hosts
    run on `device`, the baselines (scikit-learn) on the CPU."""
    common = dict(
        dataset=dataset,
        seed=seed,
        n_train=len(split.y_train),
        n_test=len(split.y_test),
        n_features=split.X_train.shape[1],
    )
    rows = []
    for name, factory in BASELINES.items():
        model = factory(split, seed).fit(split.X_train, split.y_train)
        rows.append({**common, "model": name, "rmse": rmse(split.y_test, model.predict(split.X_test)), "device": "cpu"})
    for host, path in hosts.items():
        for preset in presets:
            overrides = preset_overrides(preset)
            reg, _ = fit_host(path, split, random_state=seed, n_estimators=n_estimators, device=device, **overrides)
            pred = reg.predict(split.X_test)
            label = device_label(reg.devices_[0])
            rows.append({**common, "model": f"{host}[{preset}]", "rmse": rmse(split.y_test, pred), "device": label})
    return rows


def summarise(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model: worst dataset RMSE/mean ratio, geometric-mean RMSE ratios to ridge and RF, and
    whether the host bar holds. Ratios are taken per dataset x seed, then averaged per dataset."""
    wide = scores.pivot_table(index=["dataset", "seed"], columns="model", values="rmse")
    devices = scores.groupby("model")["device"].first()
    rows = []
    for model in wide.columns:
        to_mean = (wide[model] / wide["mean"]).groupby(level="dataset").mean()
        geo_ridge = float(np.exp(np.log(wide[model] / wide["ridge"]).mean()))
        geo_rf = float(np.exp(np.log(wide[model] / wide["random_forest"]).mean()))
        rows.append(
            {
                "model": model,
                "worst_rmse_over_mean": round(float(to_mean.max()), 4),
                "worst_dataset": to_mean.idxmax(),
                "geomean_rmse_over_ridge": round(geo_ridge, 4),
                "geomean_rmse_over_rf": round(geo_rf, 4),
                "device": devices[model],
                "meets_bar": bool(to_mean.max() <= MEAN_RATIO_BAR and geo_ridge <= RIDGE_GEOMEAN_BAR),
            }
        )
    return pd.DataFrame(rows).sort_values("geomean_rmse_over_ridge").reset_index(drop=True)


def extrapolation_probe(
    model: object, n_train: int = 500, seed: int = 0, x_z: Sequence[float] = (0, 1, 2, 3, 4, 5, 6)
) -> pd.DataFrame:
    """How a regressor extends a plain linear trend past its data: fit `y = 1.6 x + noise` (x
    standard normal, noise sd 0.16) on `n_train` rows, predict at `x_z` training standard
    deviations. Returns x, the true y and the prediction, all in training-y z units; an exact
    linear learner predicts `true_y_z` (a host whose tail bucket is too wide overshoots there)."""
    rng = np.random.default_rng(seed)
    x_train = rng.normal(size=n_train)
    y_train = 1.6 * x_train + 0.16 * rng.normal(size=n_train)
    x_test = x_train.mean() + x_train.std() * np.asarray(x_z, dtype=float)
    pred = model.fit(x_train[:, None], y_train).predict(x_test[:, None])
    mean, std = y_train.mean(), y_train.std()
    true_z, pred_z = (1.6 * x_test - mean) / std, (np.asarray(pred) - mean) / std
    return pd.DataFrame({"x_z": np.asarray(x_z, dtype=float), "true_y_z": true_z, "pred_y_z": pred_z})


def per_dataset_ratios(scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """Mean over seeds of RMSE(model)/RMSE(baseline) per dataset, for each baseline."""
    wide = scores.pivot_table(index=["dataset", "seed"], columns="model", values="rmse")
    ratios = pd.DataFrame({f"rmse / {b}": wide[model] / wide[b] for b in BASELINES})
    return ratios.groupby(level="dataset").mean().round(3).reset_index()
