"""The sink / presence decomposition: arms from the config, extra units of a case, the arm table."""

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest
import yaml

import retrofit
import retrofit.adapters.block as block
from retrofit.errors import RunnerError
from retrofit.fitting import fit_case
from retrofit.hosts import available, get_path
from retrofit.results.record import UnitRecord
from retrofit.results.run_files import ARM_COLUMNS, aggregate
from retrofit.runner.case import UnitSpec, run_case
from retrofit.runner.finish import case_records
from retrofit.runner.sweep_config import ARMS_FILE, Decomposition, with_arms

MAIN_UNITS = (UnitSpec("baseline"), UnitSpec("full_o"), UnitSpec("oa_only"))
ARMS = ["paper", "presence_only", "sink_only", "identity_check"]
SETTINGS = {  # arm -> (tau_c, eps_den, eps_mode) the variants run with
    "paper": (1e-3, 1e-6, "absolute"),
    "presence_only": (1e-3, 1e-6, "relative"),
    "sink_only": (1e-9, 1e-6, "absolute"),
    "identity_check": (1e-9, 1e-6, "relative"),
}
IDENTITY_BOUND_PCT = 0.05
"""identity_check (presences 1, relative sink) must stay this close to the baseline's RMSE."""


@pytest.fixture
def arms_case(make_case):
    """`make_case` whose units are the main ones plus the packaged decomposition arms."""
    return partial(make_case, units=with_arms(MAIN_UNITS, yaml.safe_load(ARMS_FILE.read_text()), 0))


def test_the_shipped_arms_switch_sink_and_presence():
    decomposition = Decomposition.load()
    assert decomposition.variants == ("oa_only", "full_o") and list(decomposition.arms) == ARMS
    for variant in decomposition.variants:
        assert {arm: decomposition.settings(variant, arm) for arm in ARMS} == SETTINGS


def test_arms_are_extra_untimed_units_next_to_the_variant_units():
    assert with_arms(MAIN_UNITS, None, 0) == MAIN_UNITS  # no decomposition config: the units as they are
    units = Decomposition.load().labelled(MAIN_UNITS, 0)
    assert [(u.variant, u.arm, u.arm_extra) for u in units[:3]] == [
        ("baseline", "", False),
        ("full_o", "paper", False),  # the paper arm is the variant unit itself, labelled
        ("oa_only", "paper", False),
    ]
    extra = units[3:]
    assert len(extra) == 6 and all(u.arm_extra and not u.timed for u in extra)
    assert {(u.variant, u.hparams["eps_mode"], u.hparams["tau"]["c"]) for u in extra} == {
        (v, mode, c)
        for v in ("oa_only", "full_o")
        for mode, c in [("relative", 1e-3), ("absolute", 1e-9), ("relative", 1e-9)]
    }
    assert len(Decomposition.load().labelled((UnitSpec("baseline"), UnitSpec("oa_only")), 0)) == 2 + 3


def test_arm_seeds_select_the_cases_that_run_the_arms():
    """`seeds` null: every case runs the arms; a list: only the cases with those seeds, the others
    keep their main units, unlabelled."""
    node = yaml.safe_load(ARMS_FILE.read_text())
    assert Decomposition.from_node(node).seeds is None
    every = [len(with_arms(MAIN_UNITS, node, seed)) for seed in (0, 1, 7)]
    chosen = {**node, "seeds": [0, 2]}
    picked = [with_arms(MAIN_UNITS, chosen, seed) for seed in (0, 1, 2)]
    assert every == [3 + 6] * 3 and [len(units) for units in picked] == [3 + 6, 3, 3 + 6]
    assert picked[1] == MAIN_UNITS and picked[0] == with_arms(MAIN_UNITS, node, 0)
    with pytest.raises(RunnerError, match="seeds"):
        Decomposition.from_node({**node, "seeds": ["zero"]})


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"variants": ["oa_only"], "arms": {"a": {}}, "armz": {}}, "bad key 'armz'"),
        (
            {"variants": ["oa_only"], "arms": {"a": {"tau_c": 1e-3}}},
            "arm 'a' of 'oa_only': unknown retrofit hyper-parameters",
        ),
        (
            {"variants": ["oa_only"], "arms": {"a": {}, "b": {"eps_mode": "absolute"}}},
            "two arms of 'oa_only' run the same",
        ),
        (
            {"variants": ["oa_only"], "arms": {"a": {"tau": {"mode": "absolute", "value": 1.0}}}},
            "needs a calibrated tau",
        ),
    ],
)
def test_bad_arms_are_refused_by_name(node, message):
    with pytest.raises(RunnerError, match=message):
        Decomposition.from_node(node)


def test_arm_rows_of_a_random_host_case(make_random_host, tmp_path, arms_case):
    case = arms_case(make_random_host("tabpfn_v3"), tmp_path / "runs", "carseats", n_estimators=1, timing_rounds=1)
    rows = run_case(case)
    assert len(rows) == 3 + 6
    frame = aggregate(tmp_path, case_records(case, rows))
    arms = pd.read_csv(tmp_path / "decomposition.csv")
    assert list(arms.columns) == ARM_COLUMNS and len(arms) == 2 * 4 and len(frame) == 9
    assert list(arms["arm"]) == ARMS * 2 and list(arms["variant"]) == ["full_o"] * 4 + ["oa_only"] * 4
    for row in arms.itertuples():
        assert (row.tau_c, row.eps_den, row.eps_mode) == SETTINGS[row.arm]
    by_unit = {(r["variant"], r["hparams"]): r for r in rows}
    for variant in ("oa_only", "full_o"):  # the paper arm is the variant unit; arms are not timed
        paper = arms[(arms["variant"] == variant) & (arms["arm"] == "paper")].iloc[0]
        assert paper["delta_rmse_pct"] == by_unit[(variant, "")]["delta_rmse_pct"]
        assert not math.isnan(by_unit[(variant, "")]["predict_seconds"])
    assert all(math.isnan(r["predict_seconds"]) for r in rows if r["hparams"])
    table = (tmp_path / "decomposition.md").read_text()
    assert all(f"| {arm} " in table for arm in ARMS) and (tmp_path / "decomposition.png").stat().st_size > 0
    main_table = (tmp_path / "retrofit_table.md").read_text()  # the arms beyond the variant units stay out of it
    assert "| oa_only " in main_table and "eps_mode=" not in main_table


def test_the_aggregation_reads_arms_off_the_records_not_the_arms_file(tmp_path):
    """A unit that runs an arm's settings but is not labelled an arm (a user's own overrides) is a main
    row; the arm table holds exactly the labelled rows."""
    row = synthetic_row(variant="oa_only", hparams={"eps_mode": "relative"})
    aggregate(tmp_path, [UnitRecord.from_row(synthetic_row(variant="baseline", hparams={})), UnitRecord.from_row(row)])
    assert not (tmp_path / "decomposition.csv").exists()
    assert "| oa_only (eps_mode=relative) " in (tmp_path / "retrofit_table.md").read_text()
    labelled = UnitRecord.from_row(row, arm="mine", arm_extra=True)
    aggregate(tmp_path, [UnitRecord.from_row(synthetic_row(variant="baseline", hparams={})), labelled])
    assert pd.read_csv(tmp_path / "decomposition.csv")["arm"].tolist() == ["mine"]
    assert "eps_mode=relative" not in (tmp_path / "retrofit_table.md").read_text()


def synthetic_row(**values) -> dict:
    """A results row of a unit (every column of `UnitRecord`), numbers made up."""
    numbers = dict.fromkeys(
        [
            "rmse",
            "baseline_rmse",
            "nll",
            "baseline_nll",
            "crps",
            "baseline_crps",
            "coverage_90",
            "baseline_coverage_90",
        ],
        1.0,
    )
    deltas = dict.fromkeys(["delta_rmse_pct", "delta_nll", "delta_crps_pct", "delta_coverage_90"], 0.1)
    times = dict.fromkeys(["predict_seconds", "baseline_predict_seconds", "fit_seconds"], 1.0)
    ratios = dict.fromkeys(["predict_time_ratio", "predict_time_ratio_min", "predict_time_ratio_max"], 1.0)
    case = dict(dataset="d", seed=0, host="h", device="cpu", n_train=10, n_test=5, n_features=2, n_categorical=0)
    settings = dict(tau=1.0, tau_c=1e-3, eps_den=1e-6, eps_mode="absolute", n_missing_target=0, n_estimators=1)
    return {**case, **numbers, **deltas, **times, **ratios, **settings, **values}


@pytest.mark.slow
@pytest.mark.parametrize("host", available())
def test_identity_arm_matches_the_baseline_and_tiny_c_saturates_presence(host, tmp_path, monkeypatch, arms_case):
    """On a trained host: identity_check within 0.05 % RMSE of the baseline for both variants, and
    with c = 1e-9 every non-null carrier's presence is 1 to one float32 rounding step."""
    case = arms_case(get_path(host), tmp_path / "runs", "diabetes", host=host)
    aggregate(tmp_path, case_records(case, run_case(case)))
    arms = pd.read_csv(tmp_path / "decomposition.csv")
    identity = arms[arms["arm"] == "identity_check"]
    assert len(identity) == 2 and (identity["delta_rmse_pct"].abs() < IDENTITY_BOUND_PCT).all(), identity

    smallest: list[float] = []

    def recorded(sq, tau):
        p = presence_ratio(sq, tau)
        smallest.append(float(p[sq > 0].min()))
        return p

    presence_ratio = block.presence_ratio
    monkeypatch.setattr(block, "presence_ratio", recorded)
    fitted = fit_case(case)
    regressor, data = fitted.regressor, fitted.data
    for variant in ("oa_only", "full_o"):
        retrofit.retrofit(regressor, variant, **Decomposition.load().arms["sink_only"]).predict(data.X_test)
    assert smallest and min(smallest) >= 1.0 - np.finfo(np.float32).eps
