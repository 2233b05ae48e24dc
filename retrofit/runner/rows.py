"""A unit's results row, assembled from its case, the fitted data and the unit's prediction.

The row is what `retrofit.runner.units.UnitStore` writes and `retrofit.runner.record.UnitRecord`
reads back: `case_columns` are the columns every unit of a case shares (what ran, the data's sizes,
the baseline's RMSE, predict and fit seconds), `unit_row` adds one unit's own (its RMSE and
distribution scores matched to the baseline's, its timing, the settings its patched model used,
its decomposition labels, `commit` / `date` and its fingerprint).
"""

import functools
import platform
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_info

from retrofit.fitting import FittedCase
from retrofit.metrics import DistributionScores, rmse
from retrofit.runner.predictions import Prediction
from retrofit.runner.record import stamp
from retrofit.runner.units import UnitKey


def case_columns(
    ran: Mapping[str, Any], fitted: FittedCase, baseline: Prediction, baseline_seconds: float
) -> dict[str, Any]:
    """The columns every unit of a case shares: what ran and under which settings (`ran`,
    `retrofit.runner.case.Case.columns`), the sizes of `fitted`'s split, the baseline's RMSE on the
    test rows and its predict seconds (`baseline_seconds`), the fit time, tabpfn's version and the
    `machine`."""
    data = fitted.data
    return {
        **ran,
        "n_train": len(data.y_train),
        "n_test": len(data.y_test),
        "n_features": data.X_train.shape[1],
        "n_categorical": len(data.categorical_indices),
        "n_missing_target": fitted.table.n_missing_target,
        "baseline_rmse": rmse(data.y_test, baseline.mean),
        "baseline_predict_seconds": baseline_seconds,
        "fit_seconds": fitted.fit_seconds,
        "tabpfn_version": version("tabpfn"),
        "machine": machine(),
    }


@functools.cache
def machine() -> str:
    """The machine computing here, as a reproduction line names it: the CPU model (`/proc/cpuinfo`,
    else the platform's), the BLAS kernel numpy runs (`threadpoolctl`) and torch's SIMD level."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = models[0] if models else (platform.processor() or platform.machine())
    blas = [
        f"{i['internal_api']} {i.get('architecture', '')}".strip() for i in threadpool_info() if i["user_api"] == "blas"
    ]
    return (
        f"{cpu}; BLAS {', '.join(dict.fromkeys(blas)) or 'not found'}; torch {torch.backends.cpu.get_cpu_capability()}"
    )


def unit_row(
    common: Mapping[str, Any],
    labels: Mapping[str, Any],
    key: UnitKey,
    prediction: Prediction,
    baseline_scores: DistributionScores,
    y_test: Any,
    timing: Mapping[str, float],
    patched: Any,
    fingerprint: str,
) -> dict[str, Any]:
    """The row of the unit `key`: `common` (`case_columns`), its `labels` (`variant`, and the
    decomposition's `arm` and `arm_extra` as this sweep gives them: `retrofit.runner.collect`
    relabels stored rows), the RMSE of `prediction` on `y_test` and its change in % of the
    baseline's, its distribution scores matched to `baseline_scores`, its `timing` columns (times
    and the timing settings they ran under), the settings `patched` used (`effective_hparams`), the
    tau it took, `stamp()` and `fingerprint`."""
    variant_rmse = rmse(y_test, prediction.mean)
    baseline_rmse = common["baseline_rmse"]
    return {
        **common,
        **labels,
        "hparams": dict(key.hparams),
        "rmse": variant_rmse,
        "delta_rmse_pct": 100.0 * (variant_rmse - baseline_rmse) / baseline_rmse,
        **DistributionScores.of(y_test, prediction.distribution).matched(baseline_scores),
        **timing,
        **effective_hparams(patched),
        "tau": prediction.tau,
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
