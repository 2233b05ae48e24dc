"""`experiments/bench_batch.py` end to end: paired rounds of predict_many against sequential predict."""

import pandas as pd
import pytest
from processes import run_experiment


@pytest.mark.slow
def test_bench_batch_writes_paired_rounds(tmp_path):
    csv = tmp_path / "bench.csv"
    settings = ["seeds=[0]", "datasets=[diabetes,hitters]", "n_estimators=1", "rounds=2", "threads=1"]
    out = run_experiment("bench_batch.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv)
    assert len(table) == 2 and (table.speedup > 0).all()
    assert "predict_many speed-up over sequential predict" in out.stdout
