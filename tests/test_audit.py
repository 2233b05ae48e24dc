"""The O-closure audit: null rows at the in-context entry, absent rows and columns at the raw input
(fast on tiny random hosts; slow on the shipped tiny_v3 and tiny_v3_5)."""

import math
import re

import pandas as pd
import pytest
from processes import run_entry_point
from synthetic import fit_synthetic, regression_data

from retrofit.adapters import ARCHITECTURES
from retrofit.audit import INSERTIONS, RAW_INSERTIONS, REL_BOUND, Insertion, audit_host
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, inference_config, make_regressor

VARIANTS = {
    "baseline": {"variant": "baseline"},
    "full_o": {"variant": "full_o"},
    "full_o_compact": {"variant": "full_o", "compact": True},
    "o_closed": {"variant": "o_closed"},
    "o_closed_compact": {"variant": "o_closed", "compact": True},
}
N_NULL = [1, 8]
AUDITED = ("tabpfn_v2_6", "tabpfn_v3", "tabpfn_v3_5")
CLOSED = {arch for arch in AUDITED if ARCHITECTURES[arch].closed_wrapper is not None}


def first_attention(arch: str) -> str:
    """The path of the first in-context block's attention, as the architecture's spec and wrapper
    name it (the audit's rows name modules by that path)."""
    spec = ARCHITECTURES[arch]
    return f"{spec.blocks}.0.{spec.wrapper.part_modules['attention'][0]}"


@pytest.fixture(scope="module", params=AUDITED)
def audit(request, make_random_host):
    arch = request.param
    regressor, X_test = fit_synthetic(make_random_host(arch), n=70, n_train=50)
    return arch, audit_host(arch, regressor, X_test, VARIANTS, N_NULL)


def _rows(rows, variant, at=None, kind=None):
    """The rows of `variant`, of insertion place `at` and null kind `kind` when given."""
    return [
        r for r in rows if r["variant"] == variant and at in (None, r["inserted_at"]) and kind in (None, r["null_kind"])
    ]


def test_every_variant_insertion_count_and_block_has_one_row(audit):
    arch, rows = audit
    keys = [(r["variant"], r["inserted_at"], r["null_kind"], r["n_null"], r["block"]) for r in rows]
    assert len(keys) == len(set(keys))
    measured = [v for v in VARIANTS if arch in CLOSED or not v.startswith("o_closed")]
    blocks = 2  # in-context blocks of the tiny hosts
    refused = len(VARIANTS) - len(measured)
    assert len(rows) == len(INSERTIONS) * len(N_NULL) * (len(measured) * blocks + refused)
    assert {(r["inserted_at"], r["null_kind"]) for r in rows} == {(i.at, i.kind) for i in INSERTIONS}


def test_stock_host_leaks_at_the_in_context_entry_and_at_the_input(audit):
    """Zero columns leak into tabpfn_v3 and v3.5 but not into v2.6, whose encoder drops constant columns."""
    arch, rows = audit
    for row in _rows(rows, "baseline", "icl_entry"):
        assert row["linf_hidden"] > 1e-3 and row["first_leaking_module"] == first_attention(arch)
    kinds = ("rows",) if arch == "tabpfn_v2_6" else ("rows", "columns")
    for row in [row for kind in kinds for row in _rows(rows, "baseline", "input", kind)]:
        assert row["linf_pred"] > 1e-4 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"


@pytest.mark.parametrize("variant", ["full_o", "full_o_compact"])
def test_full_o_holds_in_context_but_leaks_at_the_input(audit, variant):
    _, rows = audit
    for row in _rows(rows, variant, "icl_entry"):
        assert row["linf_hidden"] <= REL_BOUND * row["max_abs_hidden"] and row["first_leaking_module"] == ""
        assert row["linf_hidden"] == 0.0 or variant == "full_o"
    for row in _rows(rows, variant, "input", "rows"):
        assert row["linf_pred"] > 1e-4 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"


REFUSALS = {"tabpfn_v2_6": "the tabpfn_v2 family cannot be O-closed at its input"}
"""Architecture without a whole-model closure -> the reason its o_closed rows give."""


def test_o_closed_holds_everywhere_where_it_exists_and_is_refused_with_the_reason_elsewhere(audit):
    """With a closure: closed to rounding, bitwise with compaction. Without: refused rows, no numbers."""
    arch, rows = audit
    assert (arch in CLOSED) != (arch in REFUSALS)
    if arch in REFUSALS:
        for row in _rows(rows, "o_closed") + _rows(rows, "o_closed_compact"):
            assert row["status"] == "refused" and math.isnan(row["linf_pred"])
            assert row["first_leaking_module"] == REFUSALS[arch]
        return
    for row in _rows(rows, "o_closed"):
        assert row["max_abs_hidden"] > 0.1 and row["max_abs_pred"] > 0.05 and row["status"] == "measured"
        assert row["linf_hidden"] <= REL_BOUND * row["max_abs_hidden"]
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in _rows(rows, "o_closed_compact"):
        assert row["linf_hidden"] == 0.0 and row["linf_pred"] == 0.0 and row["first_leaking_module"] == ""


def test_columns_cannot_be_inserted_at_the_in_context_entry():
    with pytest.raises(RetrofitError, match="columns do not reach the in-context stage"):
        Insertion("icl_entry", "columns")


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5"])
@pytest.mark.parametrize("preset", ["lean", "v2_5_default"])
def test_raw_table_insertion_is_deletion_for_o_closed_under_any_preset(arch, preset, make_random_host):
    """Absent rows and columns inserted into the training table before the preprocessing: o_closed,
    told they are absent there, predicts what it predicts on the table without them (bitwise with
    compact), under tabpfn's v2.5 defaults (quantile views, SVD features, the row fingerprint,
    feature shuffling) as under 'lean' (one squashing view, feature shuffling); the stock host,
    refitted on the table with them, moves."""
    X, y = regression_data(0, 80, 4)
    variants = {name: VARIANTS[name] for name in ("baseline", "o_closed", "o_closed_compact")}
    regressor = make_regressor(make_random_host(arch), n_estimators=2, inference_config=inference_config(preset))
    regressor.fit(X[:60], y[:60])
    rows = audit_host(arch, regressor, X[60:], variants, [1, 3], insertions=RAW_INSERTIONS, train=(X[:60], y[:60]))
    assert {(row["null_kind"], row["status"]) for row in rows} == {("rows", "measured"), ("columns", "measured")}
    for row in _rows(rows, "o_closed"):
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in _rows(rows, "o_closed_compact"):
        assert row["linf_pred"] == 0.0, row
    for row in _rows(rows, "baseline"):
        assert row["linf_pred"] > 1e-3 * row["max_abs_pred"] and row["first_leaking_module"] == "not told"


def test_raw_table_insertion_needs_the_training_table(make_random_host):
    regressor, X_test = fit_synthetic(make_random_host("tabpfn_v3"), n=70, n_train=50)
    with pytest.raises(RetrofitError, match=r"pass its training table as train=\(X, y\)"):
        audit_host("v3", regressor, X_test, VARIANTS, [1], insertions=RAW_INSERTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("host", ["tiny_v3", "tiny_v3_5"])
def test_shipped_host_input_audit_separates_full_o_from_o_closed(host):
    regressor, X_test = fit_synthetic(get_path(host), n=70, n_train=50, n_estimators=2)
    variants = {name: VARIANTS[name] for name in ("full_o", "o_closed", "o_closed_compact")}
    insertions = (Insertion("input", "rows"), Insertion("input", "columns"))
    rows = audit_host(host, regressor, X_test, variants, [8], insertions=insertions)
    for row in _rows(rows, "full_o"):
        assert row["linf_pred"] > 1e-3 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"
    for row in _rows(rows, "o_closed"):
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in _rows(rows, "o_closed_compact"):
        assert row["linf_pred"] == 0.0 and row["linf_hidden"] == 0.0


def _run_audit(cwd, *overrides):
    small = ["n_null=[1]", "n_estimators=1", "insertions=[{at: icl_entry, kind: rows}]"]
    return run_entry_point("audit.py", *small, *overrides, cwd=cwd)


@pytest.mark.slow
def test_audit_driver_takes_a_user_checkpoint_and_random_hosts(tmp_path, make_random_host):
    """`host=checkpoint host.path=...` audits that checkpoint under `host.name`, with the random
    hosts of `random_hosts` (v3.5 included, o_closed measured on it); a path in `hosts`, a bad random-host entry and
    `host` together with `hosts` are refused with the fix."""
    path = make_random_host("tabpfn_v3_5")
    run = _run_audit(
        tmp_path,
        "host=checkpoint",
        f"host.path={path}",
        "host.name=mine",
        "random_hosts=[{arch: tabpfn_v3_5, seed: 1}]",
        f"output={tmp_path}/audit.csv",
    )
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "audit.csv")
    assert set(table.host) == {"mine", "random_tabpfn_v3_5_seed1"}
    full_o = table[table.variant.str.startswith("full_o")]
    assert len(full_o) == 2 * 2 * 2 and (full_o.linf_hidden <= REL_BOUND * full_o.max_abs_hidden).all()
    assert set(table[table.variant.str.startswith("o_closed")].status) == {"measured"}
    refusals = {
        f"hosts=[{path}]": "use host=checkpoint host.path=",
        "random_hosts=[{arch: tabpfn_v9, seed: 0}]": r"must be \{arch: <one of \[",
        "random_hosts=[{arch: tabpfn_v3, seed: 0, size: huge}]": r"size: <one of \['tiny', 'default'\], default tiny>",
        "hosts=[tiny_v3]": "pass either host=<name>",
    }
    for override, message in refusals.items():
        extra = ("host=checkpoint", f"host.path={path}") if override == "hosts=[tiny_v3]" else ()
        run = _run_audit(tmp_path, *extra, override)
        assert run.returncode == 1 and re.search(message, run.stderr), run.stderr


@pytest.mark.slow  # builds tabpfn_v3_5 at its default size (random weights) and refits the others per insertion
def test_a_default_size_v3_5_is_closed_from_the_raw_table(tmp_path):
    """`random_hosts` with `size: default`: tabpfn's default v3.5, stored as tabpfn publishes it;
    absent rows and columns inserted into the raw table move o_closed by rounding only (0 with
    `compact`), the stock host by far more."""
    run = _run_audit(
        tmp_path,
        "hosts=[]",
        "random_hosts=[{arch: tabpfn_v3_5, seed: 0, size: default}]",
        "insertions=[{at: raw_table, kind: rows}, {at: raw_table, kind: columns}]",
        *(f"~variants.{name}" for name in ("oa_only", "full_o", "full_o_compact")),  # not asserted on here
        f"output={tmp_path}/audit.csv",
    )
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(tmp_path / "audit.csv")
    assert set(table.host) == {"default_size_tabpfn_v3_5_seed0"} and (table.status == "measured").all()
    assert set(table.variant) == {"baseline", "o_closed", "o_closed_compact"}
    rel = (table.linf_pred / table.max_abs_pred).groupby(table.variant).max()
    assert rel["o_closed"] <= REL_BOUND and rel["o_closed_compact"] == 0 and rel["baseline"] > 1e-3
