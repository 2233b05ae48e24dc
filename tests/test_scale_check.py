"""`experiments/scale_check.py` end to end on a tiny architecture: baseline and variant measured."""

import pandas as pd
import pytest
from processes import run_experiment

from retrofit.hosts.random_host import TINY_ARCHS


@pytest.mark.slow
def test_scale_check_measures_a_tiny_architecture(tmp_path):
    csv = tmp_path / "scale.csv"
    arch = ", ".join(f"{key}: {value}" for key, value in TINY_ARCHS["tabpfn_v2"].items() if key != "max_num_classes")
    settings = [
        "archs=[tabpfn_v2]",
        "variants=[full_o]",
        f"++arch_overrides={{tabpfn_v2: {{{arch}}}}}",
        "n_train=60",
        "n_test=10",
        "n_features=3",
        "rounds=1",
        "audit_n_train=30",
        "audit_n_test=5",
        "tables=[[30,5,3],[40,6,2]]",
        "threads=1",
    ]
    run_experiment("scale_check.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv).set_index("variant")
    assert table.loc["baseline", "status"] == "measured" and table.loc["full_o", "status"] == "measured"
