"""`experiments/exactness.py` end to end on one small shape: null receivers stay exactly zero."""

import pandas as pd
from processes import run_experiment


def test_exactness_writes_null_receivers_that_stay_zero(tmp_path):
    csv = tmp_path / "exactness.csv"
    shape = "shapes=[{B: 1, H: 2, Q: 16, K: 12, D: 8}]"
    run_experiment("exactness.py", shape, "score_stds=[1.0]", f"output_csv={csv}", cwd=tmp_path)
    table = pd.read_csv(csv)
    assert len(table) == 3 * 2 * 3 and (table.null_receiver_max_abs == 0).all()  # implementations x eps_mode x dtypes
    assert set(table.eps_mode) == {"absolute", "relative"}
    assert (table[table.implementation == "compact"].null_insertion_linf_abs == 0).all()
