"""`experiments/padding_demo.py` end to end: o_closed ignores predict_many's padding, the stock host does not."""

import pandas as pd
import pytest
from processes import run_experiment


@pytest.mark.slow
def test_padding_demo_shows_o_closed_ignores_the_padding(tmp_path):
    csv = tmp_path / "padding.csv"
    settings = ["seeds=[0]", "datasets=[diabetes,hitters]", "n_estimators=1", "max_padding=10"]  # one padded bucket
    run_experiment("padding_demo.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv).set_index(["variant", "dataset"])
    assert set(table.index) == {(v, d) for v in ("baseline", "o_closed") for d in ("diabetes", "hitters")}
    assert (table.loc["o_closed", "rel_delta_pred"] <= 1e-5).all()
    assert (table.loc["baseline", "rel_delta_pred"] > 1e-3).any()
