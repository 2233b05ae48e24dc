"""A unit's results row, assembled from its case, the fitted data and the unit's prediction.

The row is what `retrofit.runner.units.UnitStore` writes and `retrofit.runner.record.UnitRecord`
reads back: `case_columns` are the columns every unit of a case shares (what ran, the data's sizes,
the baseline's RMSE, predict and fit seconds), `unit_row` adds one unit's own (its RMSE and
distribution scores matched to the baseline's, its timing, the settings its patched model used,
its decomposition labels, `commit` / `date` and its fingerprint).
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from retrofit.fitting import FittedCase
from retrofit.metrics import DistributionScores, rmse
from retrofit.runner.predictions import Prediction
from retrofit.runner.record import stamp
from retrofit.runner.units import UnitKey

if TYPE_CHECKING:  # the case module imports this one
    from retrofit.runner.case import Case, UnitSpec


def case_columns(case: "Case", fitted: FittedCase, baseline: Prediction, baseline_seconds: float) -> dict[str, Any]:
    """The columns every unit of `case` shares: what ran, the sizes of `fitted`'s split, the
    baseline's RMSE on the test rows and its predict seconds (`baseline_seconds`), the fit time."""
    data = fitted.data
    return {
        "dataset": case.dataset.name,
        "seed": case.seed,
        "host": case.host,
        "device": case.device,
        "n_train": len(data.y_train),
        "n_test": len(data.y_test),
        "n_features": data.X_train.shape[1],
        "n_categorical": len(data.categorical_indices),
        "n_missing_target": fitted.table.n_missing_target,
        "n_estimators": case.n_estimators,
        "baseline_rmse": rmse(data.y_test, baseline.mean),
        "baseline_predict_seconds": baseline_seconds,
        "fit_seconds": fitted.fit_seconds,
    }


def unit_row(
    common: Mapping[str, Any],
    unit: "UnitSpec",
    key: UnitKey,
    prediction: Prediction,
    baseline_scores: DistributionScores,
    y_test: Any,
    timing: Mapping[str, float],
    patched: Any,
    fingerprint: str,
) -> dict[str, Any]:
    """The row of `unit` (key `key`): `common` (`case_columns`), the RMSE of `prediction` on
    `y_test` and its change in % of the baseline's, its distribution scores matched to
    `baseline_scores`, its `timing` columns (`retrofit.runner.predictions.timing_columns`), the
    settings `patched` used (`effective_hparams`), the tau it took, the decomposition labels as
    this sweep gives them (`retrofit.runner.collect` relabels stored rows), `stamp()` and
    `fingerprint`."""
    variant_rmse = rmse(y_test, prediction.mean)
    baseline_rmse = common["baseline_rmse"]
    return {
        **common,
        "variant": unit.variant,
        "hparams": dict(key.hparams),
        "rmse": variant_rmse,
        "delta_rmse_pct": 100.0 * (variant_rmse - baseline_rmse) / baseline_rmse,
        **DistributionScores.of(y_test, prediction.distribution).matched(baseline_scores),
        **timing,
        **effective_hparams(patched),
        "tau": prediction.tau,
        "arm": unit.arm,
        "arm_extra": unit.arm_extra,
        **stamp(),
        "fingerprint": fingerprint,
    }


def effective_hparams(patched: Any) -> dict[str, Any]:
    """The tau rule, `eps_den` and `eps_mode` the patched model uses, read off its `retrofit_report_`.

    `tau_rule` is the rule as applied: `c=<c> (calibrated)` (tau = c · median ||h||² of the context
    carriers, computed per layer and ensemble member at predict time) or `<value> (absolute)`;
    empty for the baseline, which patches nothing. `tau_c`: that c (None unless calibrated). The
    tau values themselves are taken at predict time (`retrofit.runner.predictions.predict`).
    """
    variant = patched.retrofit_report_.variant
    rule = variant.tau
    tau_rule = ""
    if rule is not None:
        tau_rule = f"c={rule.c:g} (calibrated)" if rule.mode == "calibrated" else f"{rule.value:g} (absolute)"
    tau_c = rule.c if rule is not None and rule.mode == "calibrated" else None
    return {"tau_rule": tau_rule, "tau_c": tau_c, "eps_den": variant.eps_den, "eps_mode": variant.eps_mode}
