"""The sweep-cost benchmark's entry point (`experiments/sweep_cost.py`, `benchmarks.phase_costs`):
CPU seconds per phase of a case, with the shared stages on and off."""

import pandas as pd
import pytest
from processes import run_entry_point


@pytest.mark.slow
def test_the_sweep_cost_entry_point_writes_every_phase_of_both_modes(tmp_path):
    csv = tmp_path / "cost.csv"
    settings = ["hosts=[tiny_v3]", "datasets=[hitters]", "seeds=[1]", "repeats=1", f"cache_dir={tmp_path}/cache"]
    out = run_entry_point("sweep_cost.py", *settings, f"output={csv}", cwd=tmp_path, OMP_NUM_THREADS="1")
    assert out.returncode == 0, out.stderr[-3000:]
    table = pd.read_csv(csv)
    cases = table[table.phase != "import"]
    assert len(cases) == 2 * 5 and set(cases.shared_stages) == {True, False}  # 5 phases, shared and not
    assert (cases.cpu_s >= 0).all() and table[table.phase == "import"].cpu_s.item() > 0
