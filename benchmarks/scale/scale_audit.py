"""The scale check's closure audit: absent train rows or feature columns inserted at the model's input."""

from pathlib import Path

import pandas as pd

from benchmarks.scale.scale_settings import ScaleConfig, fitted
from retrofit.audit import Insertion, audit_host


def audit_changes(arch: str, path: Path, cfg: ScaleConfig, variants: list[str]) -> dict[tuple[str, str], float]:
    """(variant, rows|columns) -> the largest |prediction change| / max |prediction| under `n_null`
    absent train rows or feature columns at the input (`retrofit.audit.audit_host`), on the audit table."""
    regressor, X_test = fitted(
        path, cfg.audit_n_train, cfg.audit_n_test, cfg.n_features, cfg.n_estimators, cfg.seed, device=cfg.device
    )
    insertions = (Insertion("input", "rows"), Insertion("input", "columns"))
    table = pd.DataFrame(
        audit_host(arch, regressor, X_test, {v: {"variant": v} for v in variants}, [cfg.n_null], cfg.seed, insertions)
    )
    table["rel"] = table.linf_pred / table.max_abs_pred
    return table.groupby(["variant", "null_kind"]).rel.max().to_dict()
