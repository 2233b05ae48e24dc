"""The benchmark's fitted cases outside a sweep: one fitted regressor per dataset x seed, loaded,
split and fitted exactly as the sweep's `retrofit.runner.case` does (same split, preprocessing,
ensemble members and random_state)."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf
from tabpfn import TabPFNRegressor

from retrofit.runner.case import Case, case_data, fitted_regressor
from retrofit.runner.config import dataset_spec

DATASET_DIR = Path(__file__).resolve().parents[2] / "configs" / "dataset"


@dataclass(frozen=True)
class FittedCase:
    """One dataset x seed: the fitted stock regressor and its test split."""

    dataset: str
    seed: int
    regressor: TabPFNRegressor
    X_test: np.ndarray
    y_test: np.ndarray


def fitted_cases(
    host_path: Path, datasets: list[str], seeds: list[int], *, n_estimators: int = 8, base_dir: Path = Path(".")
) -> list[FittedCase]:
    """`datasets` (names in `configs/dataset/`) x `seeds`, each fitted on `host_path` as the sweep
    fits it (n_estimators members, random_state = seed)."""
    cases = []
    for name in datasets:
        spec = dataset_spec(OmegaConf.load(DATASET_DIR / f"{name}.yaml"))
        for seed in seeds:
            case = Case(spec, seed, "host", Path(host_path), (), base_dir, base_dir, n_estimators=n_estimators)
            _, data = case_data(case)
            regressor, _ = fitted_regressor(case, data)
            cases.append(FittedCase(name, seed, regressor, data.X_test, data.y_test))
    return cases
