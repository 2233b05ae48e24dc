"""The O-closure audit: null rows at the in-context entry, absent rows and columns at the raw input
(fast on tiny random hosts; slow on the shipped tiny_v3)."""

import math

import numpy as np
import pytest

from retrofit.audit import INSERTIONS, REL_BOUND, Insertion, audit_host
from retrofit.errors import RetrofitError
from retrofit.hosts import get_path, make_regressor

VARIANTS = {
    "baseline": {"variant": "baseline"},
    "full_o": {"variant": "full_o"},
    "full_o_compact": {"variant": "full_o", "compact": True},
    "o_closed": {"variant": "o_closed"},
    "o_closed_compact": {"variant": "o_closed", "compact": True},
}
N_NULL = [1, 8]
ATTENTION = {"tabpfn_v3": "icl_blocks.0.icl_attention", "tabpfn_v2_6": "blocks.0.per_column_attention_between_cells"}


def _fitted(path, n_estimators=1):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 4))
    regressor = make_regressor(path, n_estimators=n_estimators, random_state=0)
    return regressor.fit(X[:50], X[:50, 0] + 0.1 * rng.normal(size=50)), X[50:]


@pytest.fixture(scope="module", params=sorted(ATTENTION))
def audit(request, make_random_host):
    arch = request.param
    regressor, X_test = _fitted(make_random_host(arch))
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
    measured = [v for v in VARIANTS if arch == "tabpfn_v3" or not v.startswith("o_closed")]
    blocks = 2  # in-context blocks of the tiny hosts
    refused = len(VARIANTS) - len(measured)
    assert len(rows) == len(INSERTIONS) * len(N_NULL) * (len(measured) * blocks + refused)
    assert {(r["inserted_at"], r["null_kind"]) for r in rows} == {(i.at, i.kind) for i in INSERTIONS}


def test_stock_host_leaks_at_the_in_context_entry_and_at_the_input(audit):
    """Zero columns leak into tabpfn_v3 but not into v2.6, whose encoder drops constant columns."""
    arch, rows = audit
    for row in _rows(rows, "baseline", "icl_entry"):
        assert row["linf_hidden"] > 1e-3 and row["first_leaking_module"] == ATTENTION[arch]
    kinds = ("rows", "columns") if arch == "tabpfn_v3" else ("rows",)
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


def test_o_closed_holds_everywhere_to_rounding_and_bitwise_with_compaction(audit):
    arch, rows = audit
    if arch != "tabpfn_v3":
        pytest.skip("o_closed is tabpfn_v3 only (the v2 family's refusal is tested below)")
    for row in _rows(rows, "o_closed"):
        assert row["max_abs_hidden"] > 0.1 and row["max_abs_pred"] > 0.05 and row["status"] == "measured"
        assert row["linf_hidden"] <= REL_BOUND * row["max_abs_hidden"]
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in _rows(rows, "o_closed_compact"):
        assert row["linf_hidden"] == 0.0 and row["linf_pred"] == 0.0 and row["first_leaking_module"] == ""


def test_o_closed_on_the_v2_family_is_refused_with_the_reason(audit):
    arch, rows = audit
    if arch == "tabpfn_v3":
        pytest.skip("tabpfn_v3 is measured")
    for row in _rows(rows, "o_closed") + _rows(rows, "o_closed_compact"):
        assert row["status"] == "refused" and math.isnan(row["linf_pred"])
        assert row["first_leaking_module"] == "the tabpfn_v2 family cannot be O-closed at its input"


def test_columns_cannot_be_inserted_at_the_in_context_entry():
    with pytest.raises(RetrofitError, match="columns do not reach the in-context stage"):
        Insertion("icl_entry", "columns")


@pytest.mark.slow
def test_tiny_v3_input_audit_separates_full_o_from_o_closed():
    regressor, X_test = _fitted(get_path("tiny_v3"), n_estimators=2)
    variants = {name: VARIANTS[name] for name in ("full_o", "o_closed", "o_closed_compact")}
    insertions = (Insertion("input", "rows"), Insertion("input", "columns"))
    rows = audit_host("tiny_v3", regressor, X_test, variants, [8], insertions=insertions)
    for row in _rows(rows, "full_o"):
        assert row["linf_pred"] > 1e-3 * row["max_abs_pred"] and row["first_leaking_module"] == "column_stage"
    for row in _rows(rows, "o_closed"):
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in _rows(rows, "o_closed_compact"):
        assert row["linf_pred"] == 0.0 and row["linf_hidden"] == 0.0
