"""The scale check's table: every architecture's rows, measured one architecture after another."""

import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.scale.audit import audit_changes
from benchmarks.scale.config import ScaleConfig
from benchmarks.scale.memory import memory_probe
from benchmarks.scale.predict_many import predict_many_row
from benchmarks.scale.rows import BASELINE, COLUMNS, PREDICT_MANY, refused, row
from benchmarks.scale.timing import predict_timing
from benchmarks.tools.memory import check_linux
from retrofit.adapters import ARCHITECTURES
from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint
from retrofit.hosts.random_host import default_size_host
from retrofit.hosts.validation import architecture_name
from retrofit.measure.timing import spread, torch_threads
from retrofit.variants import resolve_variant

log = logging.getLogger(__name__)


def scale_table(cfg: ScaleConfig, folder: Path) -> pd.DataFrame:
    """The rows of every architecture in `cfg.archs` (hosts written into `folder`)."""
    check_linux()
    rows = []
    for arch in cfg.archs:
        log.info("scale check: %s", arch)
        done = arch_rows(arch, cfg, Path(folder))
        log.info("scale check: %s done (in progress, not the result file):\n%s", arch, _progress(done))
        rows += done
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _progress(rows: list[dict[str, Any]]) -> str:
    """One architecture's rows as text, for the log while the others run."""
    return pd.DataFrame(rows, columns=list(COLUMNS)).drop(columns="reason").to_string(index=False, float_format="%.4g")


def arch_rows(arch: str, cfg: ScaleConfig, folder: Path) -> list[dict[str, Any]]:
    """baseline, each variant and predict_many of `arch` at its default size."""
    load_start = os.getloadavg()[0]
    labels = [BASELINE, *cfg.variants, PREDICT_MANY]
    written = default_size_host(arch, folder / arch, cfg.seed, cfg.arch_overrides.get(arch))
    try:
        path = check_checkpoint(written)
    except RetrofitError as err:  # the message names the file; its temporary folder says nothing
        return [refused(arch, label, str(err).replace(f"{written.parent}/", "")) for label in labels]
    spec = ARCHITECTURES[architecture_name(path)]
    reasons = {v: spec.refusal(resolve_variant(v)) for v in cfg.variants if spec.refusal(resolve_variant(v))}
    runnable = [v for v in cfg.variants if v not in reasons]
    with torch_threads(cfg.threads):
        timing, reasons = predict_timing(path, cfg, runnable, reasons)
        runnable = [v for v in runnable if v not in reasons]
        audit = audit_changes(arch, path, cfg, [BASELINE, *runnable])
        many = predict_many_row(arch, path, cfg) if "o_closed" in runnable else None
    memory = {v: memory_probe(path, v, cfg) for v in [BASELINE, *runnable]}
    stock = memory[BASELINE]
    rows = []
    for v in [BASELINE, *cfg.variants]:
        if v in reasons:
            rows.append(refused(arch, v, reasons[v]))
            continue
        median, low, high = spread(timing["ratios"][v])
        rows.append(
            row(
                arch,
                v,
                time_ratio=median,
                time_ratio_min=low,
                time_ratio_max=high,
                memory_ratio=memory[v]["predict_peak_mib"] / stock["predict_peak_mib"],
                clone_memory_ratio=memory[v]["clone_mib"] / memory[v]["weight_mib"],
                audit_rows_rel=audit[(v, "rows")],
                audit_columns_rel=audit[(v, "columns")],
                rounds=cfg.rounds,
                stock_seconds=timing["stock_seconds"],
                weight_mib=memory[v]["weight_mib"],
            )
        )
    if many is None:
        reason = reasons.get("o_closed", "o_closed is not among the variants measured")
        many = refused(arch, PREDICT_MANY, f"predict_many needs o_closed: {reason}")
    load = {"load_start": load_start, "load_end": os.getloadavg()[0]}
    return [entry | load for entry in [*rows, many]]
