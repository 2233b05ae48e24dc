"""The O-closure audit of one fitted host: per variant, insertion place, null kind and count.

For each variant the retrofitted clone predicts `X_test` once recording (reference) and once
with `k` null tokens inserted:
- `inserted_at="icl_entry"`, rows: zero carriers at the entry of the first in-context block
  (`NullRows`); the nulls are removed again before the readout;
- `inserted_at="input"`, rows or columns: absent train rows or feature columns inserted into
  the raw table at the model's input (`NullInput`); only a closed model is told they are absent;
- `inserted_at="raw_table"`, rows or columns: inserted into the training table before tabpfn's
  per-member preprocessing (`raw_table`); a closed model is told they are absent there (removed
  before the preprocessing is fitted, padded back at every member's input, declared absent), any
  other is refitted on the table with them. Prediction changes only (no per-block states).
Rows of `results/audit.csv` (`COLUMNS`): the L-inf change of the old rows' hidden states after
every in-context block, the L-inf change of the test predictions, and where the leak starts.
A variant the host cannot take (o_closed on the v2 family) gives one `status="refused"` row per
insertion and count, with the reason in `first_leaking_module`.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tabpfn import TabPFNRegressor
from tqdm.auto import tqdm

from retrofit.adapters import architecture_of
from retrofit.audit.null_input import NullInput, leaking_stage
from retrofit.audit.null_rows import NullRows, first_leaking_module
from retrofit.audit.raw_table import raw_table_predictions
from retrofit.data import DatasetSpec
from retrofit.errors import RetrofitError
from retrofit.fitting import fit_host, load_split
from retrofit.hosts.device import device_label
from retrofit.labels import DEVICE_DOC
from retrofit.patching import retrofit
from retrofit.variants import resolve_variant

COLUMN_DOCS = {
    "host": ("label", "host label"),
    "device": DEVICE_DOC,
    "variant": ("label", "retrofit variant (`baseline`: the stock host)"),
    "inserted_at": ("label", "where the nulls go in: `icl_entry`, `input` or `raw_table` (module docstring)"),
    "null_kind": ("label", "what is inserted: `rows` or `columns`"),
    "n_null": ("count", "null rows or columns inserted"),
    "block": ("label", "the in-context block whose output is compared (empty for `raw_table`)"),
    "linf_hidden": ("hidden-state units", "largest change of an old row's state after `block` when nulls are inserted"),
    "linf_pred": ("target units", "largest change of a test prediction when nulls are inserted"),
    "max_abs_hidden": ("hidden-state units", "largest |state| there without nulls (the scale rounding is relative to)"),
    "max_abs_pred": ("target units", "largest |prediction| without nulls"),
    "first_leaking_module": (
        "text",
        "`icl_entry`: the first module that turned a null carrier non-zero; `input`: the first stage where the "
        "insertion shows beyond `REL_BOUND` (`column_stage`: all before the in-context blocks); `raw_table`: "
        "`padded positions` (a closed model lets it through) or `not told`; empty if none; a refusal's reason",
    ),
    "status": ("label", "`measured`, or `refused` (a variant the host cannot take)"),
}
"""Column -> (unit, meaning) of `results/audit.csv`, in order (`raw_table` rows carry no hidden
states: `block` empty, `*_hidden` NaN)."""
COLUMNS = tuple(COLUMN_DOCS)
MEASURED = tuple(column for column in COLUMNS if column != "device")
"""The columns of one measured row; `audit_host` adds the device its regressor ran on."""

REL_BOUND = 1e-5
"""Rounding bound: a change up to this fraction of the largest magnitude is float32 summation
order (~80 ulps), not a leak."""


PLACES = {
    ("icl_entry", "rows"),
    ("input", "rows"),
    ("input", "columns"),
    ("raw_table", "rows"),
    ("raw_table", "columns"),
}
"""The (at, kind) pairs an `Insertion` can be."""


@dataclass(frozen=True)
class Insertion:
    """Where null tokens go (`at`: icl_entry | input | raw_table) and what they are (`kind`: rows | columns)."""

    at: str
    kind: str

    def __post_init__(self) -> None:
        if (self.at, self.kind) not in PLACES:
            raise RetrofitError(
                f"audit insertion at={self.at!r} kind={self.kind!r} is not one of icl_entry/rows, input/rows, "
                "input/columns, raw_table/rows, raw_table/columns (columns do not reach the in-context stage)"
            )


INSERTIONS = (Insertion("icl_entry", "rows"), Insertion("input", "rows"), Insertion("input", "columns"))
RAW_INSERTIONS = (Insertion("raw_table", "rows"), Insertion("raw_table", "columns"))
"""Before the preprocessing: they need the training table (`audit_host`'s `train`)."""


def audit_host(
    host: str,
    regressor: TabPFNRegressor,
    X_test: np.ndarray,
    variants: dict[str, dict],
    n_nulls: list[int],
    seed: int = 0,
    insertions: tuple[Insertion, ...] = INSERTIONS,
    progress: tqdm | None = None,
    train: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[dict]:
    """Audit rows (see `COLUMNS`) of the fitted `regressor` for every variant, insertion and count.

    `variants`: label -> `{"variant": name or spec, **hparams}` passed to `retrofit`; `progress`, a
    bar advanced by one per variant; `train`: the (X_train, y_train) `regressor` was fitted on,
    which the `raw_table` insertions refit on (RetrofitError if they are asked for without it).
    """
    if train is None and any(insertion.at == "raw_table" for insertion in insertions):
        raise RetrofitError("the raw_table insertions refit the regressor: pass its training table as train=(X, y)")
    arch = architecture_of(regressor.models_[0])
    rows = []
    for label, setting in variants.items():
        if progress is not None:
            progress.set_description_str(f"audit {host} {label}")
        setting = dict(setting)
        variant = setting.pop("variant")
        refusal = arch.refusal(resolve_variant(variant, **setting))
        if refusal:
            reason = refusal.split(":")[0]  # the first clause; the spec holds the whole reason
            rows += [
                _row(host, label, insertion, k, "", np.nan, np.nan, np.nan, np.nan, reason, "refused")
                for insertion in insertions
                for k in n_nulls
            ]
        else:
            patched = retrofit(regressor, variant, **setting)
            for insertion in insertions:
                if insertion.at == "raw_table":
                    raw = {"variant": variant, **setting}
                    rows += _audit_raw_table(host, label, patched, raw, train, X_test, insertion, n_nulls, seed)
                else:
                    rows += _audit_insertion(host, label, patched, X_test, insertion, n_nulls, seed)
        if progress is not None:
            progress.update()
    label = device_label(regressor.devices_[0])
    return [{**row, "device": label} for row in rows]


def _audit_insertion(host, label, patched, X_test, insertion: Insertion, n_nulls, seed) -> list[dict]:
    """The rows of one variant and insertion place, for every null count."""
    record = (
        (lambda k, s: NullRows(patched, k, seed=s))
        if insertion.at == "icl_entry"
        else (lambda k, s: NullInput(patched, k, insertion.kind, seed=s))
    )
    with record(0, seed) as reference:
        pred_ref = patched.predict(X_test)
    rows = []
    for k in n_nulls:
        with record(k, seed) as inserted:
            pred = patched.predict(X_test)
        linf_pred, scale_pred = float(np.max(np.abs(pred - pred_ref))), float(np.max(np.abs(pred_ref)))
        if insertion.at == "icl_entry":
            leak = first_leaking_module(inserted, reference)
        else:
            leak = leaking_stage(inserted, reference, REL_BOUND, linf_pred, scale_pred)
        for block, states in reference.states.items():
            pairs = list(zip(states, inserted.states[block], strict=True))
            comparable = all(a.shape == b.shape for a, b in pairs)
            linf = max(float((a - b).abs().max()) for a, b in pairs) if comparable else np.nan
            scale = max(float(a.abs().max()) for a in states)
            rows.append(_row(host, label, insertion, k, block, linf, linf_pred, scale, scale_pred, leak, "measured"))
    return rows


def _audit_raw_table(host, label, patched, setting, train, X_test, insertion: Insertion, n_nulls, seed) -> list[dict]:
    """The rows of one variant's raw-table insertion (`raw_table`), for every null count: the
    prediction change against `patched` (the variant on the regressor fitted on `train`)."""
    pred_ref = patched.predict(X_test)
    scale_pred = float(np.max(np.abs(pred_ref)))
    closed = patched.retrofit_report_.variant.closed
    rows = []
    for k in n_nulls:
        pred = raw_table_predictions(patched, train, X_test, setting, insertion.kind, k, seed)
        linf_pred = float(np.max(np.abs(pred - pred_ref)))
        leak = ""
        if linf_pred > REL_BOUND * scale_pred:
            leak = "padded positions" if closed else "not told"
        rows.append(_row(host, label, insertion, k, "", np.nan, linf_pred, np.nan, scale_pred, leak, "measured"))
    return rows


def _row(host, label, insertion, k, block, linf, linf_pred, scale, scale_pred, leak, status) -> dict:
    values = (host, label, insertion.at, insertion.kind, k, block, linf, linf_pred, scale, scale_pred, leak, status)
    return dict(zip(MEASURED, values, strict=True))


def audit_table(
    hosts: dict[str, Path],
    variants: dict[str, dict],
    n_nulls: list[int],
    *,
    dataset: DatasetSpec,
    base_dir: Path,
    n_estimators: int,
    random_state: int,
    seed: int,
    insertions: tuple[Insertion, ...] = INSERTIONS,
    device: str = "cpu",
) -> pd.DataFrame:
    """The audit over `hosts` (name -> checkpoint) on `dataset`, 70/30 split by `seed`, each host
    fitted with `random_state` on `device` (`retrofit.fitting`).

    Regressors run in float32 (`retrofit.fitting`; tabpfn's "auto" precision is bfloat16 autocast on
    CPUs with native bf16, whose rounding would swamp the rounding-level figures of this audit).
    """
    _, data = load_split(dataset, seed, base_dir=base_dir)
    rows = []
    with tqdm(total=len(hosts) * len(variants), desc="audit", unit="variant") as bar:
        for name, path in hosts.items():
            regressor, _ = fit_host(path, data, random_state=random_state, n_estimators=n_estimators, device=device)
            train = (data.X_train, data.y_train)
            rows += audit_host(name, regressor, data.X_test, variants, n_nulls, seed, insertions, bar, train)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def audit_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The largest relative prediction change (`linf_pred / max_abs_pred`) per host × variant and
    insertion (place × null kind), over null counts; refused variants read "refused"."""
    change = (table["linf_pred"] / table["max_abs_pred"]).where(table["status"] == "measured")
    summary = (
        table.assign(rel_pred=change)
        .groupby(["host", "variant", "inserted_at", "null_kind"], sort=False)["rel_pred"]
        .max()
        .map(lambda v: "refused" if pd.isna(v) else f"{v:.2g}")
    )
    return summary.unstack(["inserted_at", "null_kind"])
