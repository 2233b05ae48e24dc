"""Removal explanations against refits (benchmarks.removal_vs_refit.removal_at_scale) on small default-layout hosts:
the contracts hold, the reference is a refit, refusals are named."""

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from benchmarks.removal_vs_refit.explain_scale_settings import ExplainScaleConfig
from benchmarks.removal_vs_refit.removal_at_scale import COLUMNS, QUANTITIES, scale_table
from retrofit.errors import RetrofitError

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "explain_scale.yaml"
SMALL = {"tabpfn_v3": {"nlayers": 2, "embed_dim": 64}, "tabpfn_v3_5": {"nlayers": 2}, "tabpfn_v2": {"nlayers": 2}}
"""Fewer layers than tabpfn's defaults (every other key as tabpfn builds it), so the test takes seconds."""


def _config(overrides: dict) -> ExplainScaleConfig:
    """`configs/explain_scale.yaml` (its keys, without Hydra's defaults list) with `overrides`, typed."""
    shipped = OmegaConf.load(CONFIG)
    del shipped["defaults"]
    return ExplainScaleConfig.from_config(OmegaConf.merge(shipped, overrides))


@pytest.mark.slow  # a few dozen fits of three hosts
def test_removal_matches_its_refits_on_v3_and_v3_5_and_v2_is_refused(tmp_path):
    cfg = _config(
        {"archs": list(SMALL), "arch_overrides": SMALL, "n_train": 12, "n_features": 3, "n_loo_queries": 3, "rounds": 1}
    )
    table = scale_table(cfg, tmp_path).set_index(["arch", "quantity"])
    assert list(table.reset_index().columns) == list(COLUMNS)
    for arch in ("tabpfn_v3", "tabpfn_v3_5"):
        rows = table.loc[arch]
        assert list(rows.index) == list(QUANTITIES) and (rows.status == "measured").all()
        # The removal game is the refits' game; SV and k-SII follow; redrawn outside features move nothing.
        assert rows.loc[["values", "SV", "k-SII", "invariance"], "max_rel_diff"].max() <= 1e-5
        assert rows.loc["values", "n_evaluations"] == 2**3 - 1
        assert rows.loc["SV", "efficiency_rel"] <= 1e-6
        assert rows.loc["LOO", "n_evaluations"] == 12 and np.isfinite(rows.loc["LOO", "rank_corr"])
        assert (rows.loc[["values", "LOO"], ["ours_seconds", "refit_seconds", "speedup"]] > 0).all().all()
    v2 = table.loc["tabpfn_v2"]
    assert (v2.status == "refused").all() and v2.reason.str.contains("cannot be O-closed").all()
    assert v2.max_rel_diff.isna().all()  # no number for what did not run


@pytest.mark.parametrize(
    "node, message",
    [
        ({"archs": ["tabpfn_v9"]}, "tabpfn_v9"),
        ({"rounds": 0}, "rounds"),
        ({"n_features": 11}, "n_features"),
        ({"inference_preset": "leaner"}, "leaner"),
        ({"n_explain": "two"}, "n_explain"),
    ],
)
def test_bad_explain_scale_config_is_an_error_naming_it(node, message):
    with pytest.raises(RetrofitError, match=message):
        _config(node)
