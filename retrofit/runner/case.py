"""One case: fit ONE regressor on one dataset × seed, then every requested variant on that fit.

Matched comparison: all units of a case share the split, the fitted preprocessing, the ensemble
members and the `random_state` (= the seed). The baseline prediction, from the frozen stock host
`retrofit.retrofit(fitted, "baseline")`, is computed once per case; each variant is
`retrofit.retrofit(fitted, variant, **hparams)` on the same fitted regressor, and a variant that
patches nothing reuses the baseline prediction. Inference runs in float32: tabpfn's
`inference_precision="auto"` means bfloat16 autocast on CPUs that have it, whose rounding
(~1e-3 relative) would swamp the deltas being measured. Finished units (see
`retrofit.runner.units`) are skipped unless `overwrite`; a case whose units are all finished
loads no data and fits nothing.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tabpfn import TabPFNRegressor
from tqdm.auto import tqdm

import retrofit
from retrofit.data import DatasetSpec, Split, Table, load_table, split
from retrofit.hosts import check_checkpoint, make_regressor
from retrofit.hosts.regressor import INFERENCE_PRECISION
from retrofit.metrics import rmse
from retrofit.runner.units import UnitKey, UnitStore, file_digest, fingerprint, hparams_key, reject_duplicates
from retrofit.variants import resolve_variant

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""The variant that patches nothing; its prediction is every unit's reference."""


@dataclass(frozen=True)
class UnitSpec:
    """A variant name plus the hyper-parameter overrides passed to `retrofit.retrofit`
    (keys of `retrofit.variants.HPARAMS`, e.g. `{"tau": {"mode": "calibrated", "c": 0.01}}`)."""

    variant: str
    hparams: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """Everything one case needs; built from a Hydra config by `retrofit.runner.config`."""

    dataset: DatasetSpec
    seed: int
    host: str
    host_path: Path
    units: tuple[UnitSpec, ...]
    results_dir: Path
    base_dir: Path
    n_estimators: int = 8
    test_size: float = 0.3
    overwrite: bool = False

    @property
    def runs_dir(self) -> Path:
        """Where this case's unit files live (`<results_dir>/runs`)."""
        return self.results_dir / "runs"

    def key(self, unit: UnitSpec) -> UnitKey:
        return UnitKey(self.host, self.dataset.name, self.seed, unit.variant, hparams_key(unit.hparams))


def _timed(predict: Callable[[np.ndarray], np.ndarray], X: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    pred = np.asarray(predict(X), dtype="float64")
    return pred, time.perf_counter() - start


def effective_hparams(patched: Any) -> dict[str, Any]:
    """The tau rule and `eps_den` the patched model uses, read off its `retrofit_report_`.

    `tau` is the rule as applied: `c=<c> (calibrated)` (tau = c · median ||h||² of the context
    carriers, computed per layer and ensemble member at predict time) or `<value> (absolute)`;
    empty for the baseline, which patches nothing.
    """
    variant = patched.retrofit_report_.variant
    rule = variant.tau
    tau = "" if rule is None else f"c={rule.c:g} (calibrated)" if rule.mode == "calibrated" else f"{rule.value:g} (absolute)"
    return {"tau": tau, "eps_den": variant.eps_den}


def case_data(case: Case) -> tuple[Table, Split]:
    """The cleaned table and the seeded split of `case`; DatasetError if either is unusable."""
    table = load_table(case.dataset, case.base_dir)
    return table, split(table, case.seed, case.test_size, case.dataset.max_rows)


def check_cases(cases: list[Case]) -> None:
    """Validate a whole sweep before it runs: no unit key twice, every case's data loads and
    splits. Raises RunnerError / DatasetError."""
    reject_duplicates(case.key(unit) for case in cases for unit in case.units)
    for case in cases:
        case_data(case)


def _fingerprints(case: Case, keys: list[UnitKey]) -> dict[UnitKey, str]:
    """Per unit, a digest of everything its number depends on (see `retrofit.runner.units`)."""
    host_digest = file_digest(check_checkpoint(case.host_path))
    return {
        key: fingerprint(
            {
                "host": host_digest,
                "dataset": case.dataset,
                "variant": resolve_variant(unit.variant, **unit.hparams),
                "n_estimators": case.n_estimators,
                "test_size": case.test_size,
                "inference_precision": str(INFERENCE_PRECISION),
            }
        )
        for unit, key in zip(case.units, keys)
    }


def _fitted_regressor(case: Case, data: Split) -> tuple[TabPFNRegressor, float]:
    """The case's one `TabPFNRegressor`, fitted on the training rows; and the fit time in seconds."""
    regressor = make_regressor(case.host_path, n_estimators=case.n_estimators, random_state=case.seed)
    regressor.set_params(categorical_features_indices=list(data.categorical_indices) or None)
    start = time.perf_counter()
    regressor.fit(data.X_train, data.y_train)
    return regressor, time.perf_counter() - start


def run_case(case: Case) -> list[dict[str, Any]]:
    """Run the unfinished units of `case`; return one results row per unit (finished ones read back).

    Raises DatasetError / RunnerError for user-fixable problems before any unit file is written.
    """
    keys = [case.key(u) for u in case.units]
    reject_duplicates(keys)
    store = UnitStore(case.runs_dir)
    stamps = _fingerprints(case, keys)
    done = {k: None if case.overwrite else store.finished(k, stamps[k]) for k in keys}
    todo = [(u, k) for u, k in zip(case.units, keys) if done[k] is None]
    label = f"{case.host}/{case.dataset.name}/seed={case.seed}"
    if not todo:
        log.info("%s: all %d units finished, skipped (overwrite=true recomputes)", label, len(keys))
        return [done[k] for k in keys]

    table, data = case_data(case)
    regressor, fit_seconds = _fitted_regressor(case, data)
    log.info("%s: fitted on %d rows × %d features in %.1fs", label, *data.X_train.shape, fit_seconds)
    # The reference is the frozen stock host (frozen weights take other CPU kernels, ~1e-7).
    baseline_pred, baseline_seconds = _timed(retrofit.retrofit(regressor, BASELINE).predict, data.X_test)
    baseline_rmse = rmse(data.y_test, baseline_pred)
    log.info("%s: baseline RMSE %.4g (%d test rows)", label, baseline_rmse, len(data.y_test))

    common = {
        "dataset": case.dataset.name,
        "seed": case.seed,
        "host": case.host,
        "n_train": len(data.y_train),
        "n_test": len(data.y_test),
        "n_features": data.X_train.shape[1],
        "n_categorical": len(data.categorical_indices),
        "n_missing_target": table.n_missing_target,
        "n_estimators": case.n_estimators,
        "baseline_rmse": baseline_rmse,
        "baseline_predict_seconds": baseline_seconds,
        "fit_seconds": fit_seconds,
    }
    for unit, key in tqdm(todo, desc=label, unit="variant", leave=False):
        patched = retrofit.retrofit(regressor, unit.variant, **unit.hparams)
        if patched.retrofit_report_.patched:
            pred, seconds = _timed(patched.predict, data.X_test)
        else:  # nothing patched: the baseline prediction, bit-identical by contract
            pred, seconds = baseline_pred, baseline_seconds
        if not np.isfinite(pred).all():
            raise FloatingPointError(f"{label}: variant {unit.variant!r} predicted non-finite values")
        variant_rmse = rmse(data.y_test, pred)
        row = {
            **common,
            "variant": unit.variant,
            "hparams": dict(key.hparams),
            "rmse": variant_rmse,
            "delta_rmse_pct": 100.0 * (variant_rmse - baseline_rmse) / baseline_rmse,
            "predict_seconds": seconds,
            **effective_hparams(patched),
            "fingerprint": stamps[key],
        }
        store.write(key, row)
        done[key] = row
        log.info("%s: %s RMSE %.4g (Δ %+.3f%%)", label, unit.variant, rmse, row["delta_rmse_pct"])
    return [done[k] for k in keys]
