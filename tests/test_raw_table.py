"""`retrofit.audit.raw_table`: absent rows and columns inserted into the raw training table, before
the preprocessing, are deletion for o_closed under any preset (tiny random hosts)."""

import pytest
from synthetic import AUDIT_VARIANTS, audit_rows, regression_data

from retrofit.audit import RAW_INSERTIONS, REL_BOUND, audit_host
from retrofit.hosts import inference_config, make_regressor


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5"])
@pytest.mark.parametrize("preset", ["lean", "v2_5_default"])
def test_raw_table_insertion_is_deletion_for_o_closed_under_any_preset(arch, preset, make_random_host):
    """Absent rows and columns inserted into the training table before the preprocessing: o_closed,
    told they are absent there, predicts what it predicts on the table without them (bitwise with
    compact), under tabpfn's v2.5 defaults (quantile views, SVD features, the row fingerprint,
    feature shuffling) as under 'lean' (one squashing view, feature shuffling); the stock host,
    refitted on the table with them, moves."""
    X, y = regression_data(0, 80, 4)
    variants = {name: AUDIT_VARIANTS[name] for name in ("baseline", "o_closed", "o_closed_compact")}
    regressor = make_regressor(make_random_host(arch), n_estimators=2, inference_config=inference_config(preset))
    regressor.fit(X[:60], y[:60])
    rows = audit_host(arch, regressor, X[60:], variants, [1, 3], insertions=RAW_INSERTIONS, train=(X[:60], y[:60]))
    assert {(row["null_kind"], row["status"]) for row in rows} == {("rows", "measured"), ("columns", "measured")}
    for row in audit_rows(rows, "o_closed"):
        assert row["linf_pred"] <= REL_BOUND * row["max_abs_pred"] and row["first_leaking_module"] == ""
    for row in audit_rows(rows, "o_closed_compact"):
        assert row["linf_pred"] == 0.0, row
    for row in audit_rows(rows, "baseline"):
        assert row["linf_pred"] > 1e-3 * row["max_abs_pred"] and row["first_leaking_module"] == "not told"
