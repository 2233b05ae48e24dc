"""`experiments/host_quality.py` end to end: the quality bar and, with `--config-name
preset_selection`, the presets."""

import pandas as pd
import pytest
from processes import run_experiment


@pytest.mark.slow
def test_host_quality_scores_a_host_against_the_baselines(tmp_path):
    settings = ["hosts=[tiny_v3]", "datasets=[diabetes]", "seeds=[0]", "n_estimators=1", "cards_dir=null"]
    run_experiment("host_quality.py", *settings, f"results_dir={tmp_path}", cwd=tmp_path)
    scores = pd.read_csv(tmp_path / "host_quality.csv")
    assert set(scores.model) == {"mean", "ridge", "random_forest", "gradient_boosting", "tiny_v3[stored]"}
    summary = pd.read_csv(tmp_path / "host_quality_summary.csv").set_index("model")
    assert summary.loc["mean", "worst_rmse_over_mean"] == 1.0
    assert set(pd.read_csv(tmp_path / "host_extrapolation.csv").model) == {"tiny_v3[stored]"}


@pytest.mark.slow
def test_preset_selection_scores_every_preset(tmp_path):
    settings = ["hosts=[tiny_v2]", "datasets=[cpus]", "seeds=[0]", "presets=[stored,lean]", "n_estimators=1"]
    config = ["--config-name", "preset_selection"]
    run_experiment("host_quality.py", *config, *settings, f"results_dir={tmp_path}", cwd=tmp_path)
    assert set(pd.read_csv(tmp_path / "host_quality.csv").model) >= {"tiny_v2[stored]", "tiny_v2[lean]"}
