"""The scale check's table: every architecture's rows, measured one architecture after another."""

import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.scale.memory_probe import memory_probe
from benchmarks.scale.memory_saving import memory_saving_row
from benchmarks.scale.ops_per_predict import ops_per_predict
from benchmarks.scale.predict_many import predict_many_row
from benchmarks.scale.predict_timing import predict_timing
from benchmarks.scale.scale_audit import audit_changes
from benchmarks.scale.scale_rows import BASELINE, COLUMNS, MEMORY_SAVING, PREDICT_MANY, refused, row
from benchmarks.scale.scale_settings import ScaleConfig
from benchmarks.tools.resident_memory import check_linux
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
    if cfg.device == "cpu":
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
    """baseline and each variant per table of `cfg.sizes`, predict_many and o_closed under memory
    saving of `arch` at its default size; every row names the device it ran on."""
    load_start = os.getloadavg()[0]
    labels = [BASELINE, *cfg.variants, PREDICT_MANY, MEMORY_SAVING]
    written = default_size_host(arch, folder / arch, cfg.seed, cfg.arch_overrides.get(arch))
    try:
        path = check_checkpoint(written)
    except RetrofitError as err:  # the message names the file; its temporary folder says nothing
        rows = [refused(arch, label, str(err).replace(f"{written.parent}/", "")) for label in labels]
        return [entry | {"device": device_name(cfg.device)} for entry in rows]
    spec = ARCHITECTURES[architecture_name(path)]
    reasons = {v: spec.refusal(resolve_variant(v)) for v in cfg.variants if spec.refusal(resolve_variant(v))}
    rows = []
    for i, size in enumerate(cfg.sizes):
        with torch_threads(cfg.threads):
            runnable = [v for v in cfg.variants if v not in reasons]
            timing, reasons = predict_timing(path, cfg, size, runnable, reasons)
            ops = ops_per_predict(timing.pop("models"), timing.pop("X_test")) if i == 0 else {}
        runnable = [v for v in cfg.variants if v not in reasons]
        memory = {v: memory_probe(path, v, cfg, size) for v in [BASELINE, *runnable]}
        rows += _size_rows(arch, cfg, size, timing, memory, ops, reasons)
    with torch_threads(cfg.threads):
        audit = audit_changes(arch, path, cfg, [BASELINE, *runnable])
        many = predict_many_row(arch, path, cfg) if "o_closed" in runnable else None
    first = [r for r in rows if (r["n_train"], r["n_test"], r["n_features"]) == cfg.sizes[0]]
    for entry in first:
        if entry["status"] == "measured":
            entry |= {"audit_rows_rel": audit[(entry["variant"], "rows")]}
            entry |= {"audit_columns_rel": audit[(entry["variant"], "columns")]}
    if many is None:
        reason = (
            f"predict_many needs o_closed: {reasons.get('o_closed', 'o_closed is not among the variants measured')}"
        )
        many, saving = (
            refused(arch, PREDICT_MANY, reason),
            refused(arch, MEMORY_SAVING, reason.replace("predict_many", "the memory-saving row")),
        )
    else:
        saving = memory_saving_row(arch, path, cfg)
    extra = {"load_start": load_start, "load_end": os.getloadavg()[0], "device": device_name(cfg.device)}
    return [entry | extra for entry in [*rows, many, saving]]


def _size_rows(
    arch: str,
    cfg: ScaleConfig,
    size: tuple[int, int, int],
    timing: dict[str, Any],
    memory: dict[str, dict[str, Any]],
    ops: dict[str, int],
    reasons: dict[str, str],
) -> list[dict[str, Any]]:
    """The baseline's and each variant's row on the table `size`: time and memory ratios, and the
    operation counts where `ops_per_predict` has them (the first size)."""
    n_train, n_test, n_features = size
    stock = memory[BASELINE]
    rows = []
    for v in [BASELINE, *cfg.variants]:
        if v in reasons:
            rows.append(refused(arch, v, reasons[v]) | {"n_train": n_train, "n_test": n_test, "n_features": n_features})
            continue
        median, low, high = spread(timing["ratios"][v])
        counted = {"ops_per_predict": ops[v], "ops_ratio": ops[v] / ops[BASELINE]} if ops else {}
        rows.append(
            row(
                arch,
                v,
                n_train=n_train,
                n_test=n_test,
                n_features=n_features,
                time_ratio=median,
                time_ratio_min=low,
                time_ratio_max=high,
                memory_ratio=memory[v]["predict_peak_mib"] / stock["predict_peak_mib"],
                clone_memory_ratio=memory[v]["clone_mib"] / memory[v]["weight_mib"],
                rounds=cfg.rounds,
                stock_seconds=timing["stock_seconds"],
                weight_mib=memory[v]["weight_mib"],
                **counted,
            )
        )
    return rows


def device_name(device: str) -> str:
    """ "cpu", or the name of the CUDA device the measurements ran on."""
    import torch

    return torch.cuda.get_device_name() if device == "cuda" else "cpu"
