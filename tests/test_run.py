"""`retrofit.audit.audit_host` (retrofit/audit/run.py): null rows at the in-context entry and absent rows
and columns at the model's input, one row per variant, insertion, count and block (fast on tiny
random hosts; slow on the shipped tiny_v3 and tiny_v3_5)."""

import math

import pytest
from synthetic import AUDIT_VARIANTS, audit_rows, fit_synthetic

from retrofit.adapters import ARCHITECTURES
from retrofit.audit import INSERTIONS, RAW_INSERTIONS, REL_BOUND, Insertion, audit_host
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path

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
    return arch, audit_host(arch, regressor, X_test, AUDIT_VARIANTS, N_NULL)


def test_every_variant_insertion_count_and_block_has_one_row(audit):
    arch, rows = audit
    keys = [(r["variant"], r["inserted_at"], r["null_kind"], r["n_null"], r["block"]) for r in rows]
    assert len(keys) == len(set(keys))
    measured = [v for v in AUDIT_VARIANTS if arch in CLOSED or not v.startswith("o_closed")]
    blocks = 2  # in-context blocks of the tiny hosts
    refused = len(AUDIT_VARIANTS) - len(measured)
    assert len(rows) == len(INSERTIONS) * len(N_NULL) * (len(measured) * blocks + refused)
    assert {(r["inserted_at"], r["null_kind"]) for r in rows} == {(i.at, i.kind) for i in INSERTIONS}


def test_stock_host_leaks_at_the_in_context_entry_and_at_the_input(audit):
    """Zero columns leak into tabpfn_v3 and v3.5 but not into v2.6, whose encoder drops constant columns."""
    arch, rows = audit
    for row in audit_rows(rows, "baseline", "icl_entry"):
        assert row["linf_hidden"] > 1e-3 and row["first_leaking_module"] == first_attention(arch)
    kinds = ("rows",) if arch == "tabpfn_v2_6" else ("rows", "columns")
    for row in [row for kind in kinds for row in audit_rows(rows, "baseline", "input", kind)]:
        assert row["linf_pred"] > 1e-4 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"


@pytest.mark.parametrize("variant", ["full_o", "full_o_compact"])
def test_full_o_holds_in_context_but_leaks_at_the_input(audit, variant):
    _, rows = audit
    for row in audit_rows(rows, variant, "icl_entry"):
        assert row["linf_hidden"] <= REL_BOUND * row["max_abs_hidden"] and row["first_leaking_module"] == ""
        assert row["linf_hidden"] == 0.0 or variant == "full_o"
    for row in audit_rows(rows, variant, "input", "rows"):
        assert row["linf_pred"] > 1e-4 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"


REFUSALS = {"tabpfn_v2_6": "the tabpfn_v2 family cannot be O-closed at its input"}
"""Architecture without a whole-model closure -> the reason its o_closed rows give."""


def test_o_closed_holds_everywhere_where_it_exists_and_is_refused_with_the_reason_elsewhere(audit):
    """With a closure: closed to rounding, bitwise with compaction. Without: refused rows, no numbers."""
    arch, rows = audit
    assert (arch in CLOSED) != (arch in REFUSALS)
    if arch in REFUSALS:
        for row in audit_rows(rows, "o_closed") + audit_rows(rows, "o_closed_compact"):
            assert row["status"] == "refused" and math.isnan(row["linf_pred"])
            assert row["first_leaking_module"] == REFUSALS[arch]
        return
    for row in audit_rows(rows, "o_closed"):
        assert row["max_abs_hidden"] > 0.1 and row["max_abs_pred"] > 0.05 and row["status"] == "measured"
        assert row["linf_hidden"] <= REL_BOUND * row["max_abs_hidden"]
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in audit_rows(rows, "o_closed_compact"):
        assert row["linf_hidden"] == 0.0 and row["linf_pred"] == 0.0 and row["first_leaking_module"] == ""


def test_columns_cannot_be_inserted_at_the_in_context_entry():
    with pytest.raises(RetrofitError, match="columns do not reach the in-context stage"):
        Insertion("icl_entry", "columns")


def test_raw_table_insertion_needs_the_training_table(make_random_host):
    regressor, X_test = fit_synthetic(make_random_host("tabpfn_v3"), n=70, n_train=50)
    with pytest.raises(RetrofitError, match=r"pass its training table as train=\(X, y\)"):
        audit_host("v3", regressor, X_test, AUDIT_VARIANTS, [1], insertions=RAW_INSERTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("host", ["tiny_v3", "tiny_v3_5"])
def test_shipped_host_input_audit_separates_full_o_from_o_closed(host):
    regressor, X_test = fit_synthetic(get_path(host), n=70, n_train=50, n_estimators=2)
    variants = {name: AUDIT_VARIANTS[name] for name in ("full_o", "o_closed", "o_closed_compact")}
    insertions = (Insertion("input", "rows"), Insertion("input", "columns"))
    rows = audit_host(host, regressor, X_test, variants, [8], insertions=insertions)
    for row in audit_rows(rows, "full_o"):
        assert row["linf_pred"] > 1e-3 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"
    for row in audit_rows(rows, "o_closed"):
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in audit_rows(rows, "o_closed_compact"):
        assert row["linf_pred"] == 0.0 and row["linf_hidden"] == 0.0
