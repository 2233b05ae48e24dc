"""`experiments/ablation.py` end to end on a tiny two-block host: the table it writes, the
O-transformer holding the old tokens exactly."""

import pandas as pd
from processes import run_experiment


def test_ablation_writes_its_table_and_the_otransformer_holds_the_old_tokens(tmp_path):
    csv, md = tmp_path / "ablation.csv", tmp_path / "ablation.md"
    tiny = ["d_model=16", "n_heads=2", "d_ffn=32", "n_old=8", "n_nulls=[2]", "batch=1"]
    run_experiment("ablation.py", *tiny, f"output_csv={csv}", f"output_md={md}", cwd=tmp_path)
    assert [log.name for log in (tmp_path / "outputs").rglob("*.log")] == ["ablation.log"]  # Hydra's job name
    table = pd.read_csv(csv)
    assert set(table.host) == {"standard", "oa_only", "otransformer"} and set(table.n_null) == {2}
    assert (table[table.host == "otransformer"].linf_old_tokens == 0).all()
    assert (table[table.host == "standard"].linf_old_tokens > 0).any()
    assert "| otransformer |" in md.read_text()
