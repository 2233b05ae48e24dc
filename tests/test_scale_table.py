"""The scale check on tiny hosts: rows for every variant, closure in the audit, refusals named."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from benchmarks.scale.scale_rows import COLUMNS
from benchmarks.scale.scale_settings import ScaleConfig
from benchmarks.scale.scale_table import scale_table
from benchmarks.scale.verdicts import goal_lines, worst_time_misses
from retrofit.errors import RetrofitError
from retrofit.hosts.random_host import TINY_ARCHS

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "scale_check.yaml"


def _tiny(arch: str) -> dict:
    return {k: v for k, v in TINY_ARCHS[arch].items() if k != "max_num_classes"}


def _config(overrides: dict) -> ScaleConfig:
    """`configs/scale_check.yaml` (its keys, without Hydra's defaults list) with `overrides`, typed."""
    shipped = OmegaConf.load(CONFIG)
    del shipped["defaults"]
    return ScaleConfig.from_config(OmegaConf.merge(shipped, overrides))


@pytest.mark.slow  # each memory probe is a fresh process importing torch and tabpfn
def test_scale_table_measures_what_runs_and_names_what_is_refused(tmp_path):
    cfg = _config(
        {
            "archs": ["tabpfn_v3", "tabpfn_v2"],
            "variants": ["o_closed"],
            "arch_overrides": {a: _tiny(a) for a in ("tabpfn_v3", "tabpfn_v2")},
            "n_train": 80,
            "n_test": 20,
            "n_features": 4,
            "rounds": 1,
            "audit_n_train": 40,
            "audit_n_test": 10,
            "tables": [[40, 10, 4], [60, 5, 3]],
            "memory_saving_table": [60, 20, 4],
            "memory_saving_chunk_cells": 200,
        }
    )
    table = scale_table(cfg, tmp_path).set_index(["arch", "variant"])
    assert list(table.reset_index().columns) == list(COLUMNS)
    v3 = table.loc["tabpfn_v3"]
    labels = ["baseline", "o_closed", "predict_many", "o_closed_memory_saving"]
    assert (v3.status == "measured").all() and list(v3.index) == labels and (table.device == "cpu").all()
    assert v3.loc["baseline", "time_ratio"] == 1.0 and v3.loc["baseline", "memory_ratio"] == 1.0
    # The closed model dispatches more operations than the stock one, counted exactly.
    assert v3.loc["baseline", "ops_ratio"] == 1.0 and v3.loc["o_closed", "ops_ratio"] > 1.0
    assert (
        v3.loc["o_closed", "ops_per_predict"] == v3.loc["o_closed", "ops_ratio"] * v3.loc["baseline", "ops_per_predict"]
    )
    # Under forced memory saving o_closed runs chunked and predicts what it predicts unchunked (up
    # to the rounding of smaller matrix products on this tiny random host).
    saving = v3.loc["o_closed_memory_saving"]
    assert saving.max_rel_diff <= 1e-5 and np.isfinite(saving.memory_ratio) and saving.n_train == 60
    # Absent rows / columns move the stock host's predictions and leave the o_closed one's at rounding.
    assert min(v3.loc["baseline", ["audit_rows_rel", "audit_columns_rel"]]) > 1e-3
    assert max(v3.loc["o_closed", ["audit_rows_rel", "audit_columns_rel"]]) <= 1e-5
    assert v3.loc["predict_many", "max_rel_diff"] <= 1e-5
    assert np.isfinite(v3.loc["o_closed", ["time_ratio", "memory_ratio", "clone_memory_ratio"]].astype(float)).all()
    v2 = table.loc["tabpfn_v2"]
    assert v2.loc["baseline", "status"] == "measured"
    assert (v2.loc[["o_closed", "predict_many", "o_closed_memory_saving"], "status"] == "refused").all()
    assert "cannot be O-closed" in v2.loc["o_closed", "reason"]
    assert np.isnan(v2.loc["o_closed", "time_ratio"])  # no number for what did not run
    assert any("o_closed" in line for line in goal_lines(table.reset_index()))


@pytest.mark.parametrize(
    "node, message",
    [
        ({"round": 5}, "round"),
        ({"archs": ["tabpfn_v9"]}, "tabpfn_v9"),
        ({"rounds": 0}, "rounds"),
        ({"tables": [[10, 5]]}, "tables"),
        ({"max_padding": 0.5}, "max_padding must be a finite number >= 1"),
        ({"memory_saving_table": [5000, 0, 50]}, "memory_saving_table"),
        ({"memory_saving_chunk_cells": 0}, "memory_saving_chunk_cells"),
        ({"device": "tpu"}, "device must be one of"),
    ],
)
def test_bad_scale_config_is_an_error_naming_it(node, message):
    with pytest.raises(RetrofitError, match=message):
        _config(node)


@pytest.mark.skipif(torch.cuda.is_available(), reason="refusing CUDA needs a machine without it")
def test_cuda_without_cuda_is_refused_in_one_line_before_any_work():
    with pytest.raises(RetrofitError, match=r"device=.cuda. but torch .* sees no CUDA device"):
        _config({"device": "cuda"})


def test_the_cpu_measures_its_one_table_and_cuda_its_sizes():
    cfg = _config({"n_train": 80, "n_test": 20, "n_features": 4})
    assert cfg.device == "cpu" and cfg.sizes == [(80, 20, 4)]
    cfg.device = "cuda"
    assert cfg.sizes[:1] == [(1000, 300, 10)] and (20000, 2000, 100) in cfg.sizes


def test_the_scale_settings_are_the_config_files_alone():
    """The schema holds no value of its own: a key the file leaves out is an error naming it."""
    assert _config({}).rounds == OmegaConf.load(CONFIG).rounds
    shipped = OmegaConf.load(CONFIG)
    del shipped["defaults"], shipped["rounds"]
    with pytest.raises(RetrofitError, match="rounds"):
        ScaleConfig.from_config(shipped)


def test_goal_lines_say_met_or_not_and_the_worst_time_miss_is_profiled():
    ranges = {"time_ratio_min": 0.9, "time_ratio_max": 2.0, "load_start": 0.3, "load_end": 0.5}
    rows = [
        {"arch": "a", "variant": "full_o", "time_ratio": 1.20, "memory_ratio": 1.0, "clone_memory_ratio": 0.01}
        | {"time_ratio_min": 1.15, "time_ratio_max": 1.3},
        {"arch": "a", "variant": "o_closed", "time_ratio": 1.50, "memory_ratio": 1.2, "clone_memory_ratio": 0.01}
        | {"time_ratio_min": 1.4, "time_ratio_max": 1.6},
        {"arch": "b", "variant": "full_o", "time_ratio": 1.01, "memory_ratio": 1.0, "clone_memory_ratio": 0.01}
        | {"time_ratio_min": 0.98, "time_ratio_max": 1.04},
        {"arch": "b", "variant": "predict_many", "time_ratio": 1.30} | {"time_ratio_min": 1.2, "time_ratio_max": 1.4},
        {"arch": "d", "variant": "full_o", "time_ratio": 1.03, "memory_ratio": 1.0, "clone_memory_ratio": 0.01},
        {"arch": "c", "variant": "o_closed", "status": "refused", "reason": "cannot be O-closed"},
    ]
    table = pd.DataFrame([{c: np.nan for c in COLUMNS} | {"status": "measured"} | ranges | row for row in rows])
    lines = goal_lines(table)
    assert len(lines) == 3 + 3 + 3 + 1 + 3  # every goal of every measured row, none for the refused one
    assert any(
        line.startswith("a            o_closed      time_ratio") and "1.500x" in line and "NOT MET" in line
        for line in lines
    )
    assert any(line.startswith("b            full_o        time_ratio") and line.endswith(": met") for line in lines)
    assert any(line.startswith("b            predict_many") and "NOT MET" in line for line in lines)
    # d's median (1.03x) is within its goal (1.05x), but its rounds ranged over [0.9x, 2.0x]: undecided
    (d_time,) = [line for line in lines if line.startswith("d            full_o        time_ratio")]
    assert "undecided" in d_time and "[0.90x, 2.00x]" in d_time and "load 0.3-0.5" in d_time
    assert "met" not in d_time.replace("undecided", "")
    assert worst_time_misses(table) == {"a": "o_closed"}
