"""Where a variant lives (docs/adapters.md, "Where a variant lives"): a file in the checkout's
`configs/variant/` runs by its name in the sweep, as a built-in one does; a file given by its path
is reported under its stem, never as a built-in, and two variants of one name in a run are refused."""

import logging
import math
import shutil
from pathlib import Path

import pytest
from refusals import one_line
from synthetic import houses

import retrofit
from retrofit import comparison
from retrofit.errors import RetrofitError, RunnerError
from retrofit.runner.case import run_case
from retrofit.runner.sweep_config import BUILTIN_SEARCHPATH, case_from_hydra

ROOT = Path(__file__).resolve().parents[1]
MINE = "adapters: [o_attention]\ntau: {mode: calibrated, c: 0.01}\neps_den: 1.0e-3\n"
"""A variant file of the checkout: OAttention only, at c = 0.01 and eps_den = 1e-3."""


@pytest.fixture
def checkout_compose(job_schemas, tmp_path):
    """`checkout_compose(*overrides)`: `configs/sweep.yaml` of a checkout whose `configs/variant/`
    holds `mine.yaml` (`MINE`), composed as `experiments/sweep.py` composes it (the checkout's
    `configs/` is Hydra's primary config folder), its units stored and results written in `tmp_path`."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    configs = tmp_path / "checkout" / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "variant").mkdir()
    (configs / "variant" / "mine.yaml").write_text(MINE)
    (tmp_path / "own" / "variant").mkdir(parents=True)  # a folder a test may put on the search path
    where = [f"cache_dir={tmp_path / 'cache'}", f"results_dir={tmp_path / 'results'}"]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        yield lambda *overrides: compose("sweep", [*where, *overrides], return_hydra_config=True)
    GlobalHydra.instance().clear()


def test_a_variant_in_the_checkouts_configs_folder_runs_by_its_name(checkout_compose):
    cfg = checkout_compose("variant=mine", "n_estimators=1", "timing.rounds=0")
    case = case_from_hydra(cfg, cfg.hydra)
    baseline, mine = case.units
    assert (baseline.variant, mine.variant) == ("baseline", "mine")
    resolved = mine.resolved()
    assert (resolved.name, resolved.adapters, resolved.tau.c, resolved.eps_den) == (
        "mine",
        ("o_attention",),
        0.01,
        1e-3,
    )
    rows = run_case(case)
    assert [row["variant"] for row in rows] == ["baseline", "mine"]
    assert rows[1]["tau_rule"] == "c=0.01 (calibrated)" and rows[1]["eps_den"] == 1e-3
    assert math.isfinite(rows[1]["rmse"]) and rows[1]["rmse"] != rows[0]["rmse"]  # it patched: another prediction


def test_a_variant_in_the_checkout_runs_with_every_variant_when_none_is_chosen(checkout_compose):
    cfg = checkout_compose()
    units = [unit.variant for unit in case_from_hydra(cfg, cfg.hydra).units]
    assert units == ["baseline", "full_o", "mine", "o_closed", "oa_only"]


@pytest.mark.parametrize("folder", ["checkout", "search-path"])
def test_a_sweep_variant_file_named_as_a_built_in_is_refused_in_one_line(checkout_compose, tmp_path, folder):
    """The checkout's file would hide the built-in `oa_only`; a search-path folder's would be hidden by it."""
    where = tmp_path / ("checkout/configs" if folder == "checkout" else "own")
    (where / "variant" / "oa_only.yaml").write_text(MINE)
    cfg = checkout_compose(f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path / 'own'}]")
    with pytest.raises(RunnerError, match=r"variant file .*oa_only\.yaml has the name of the built-in variant ") as err:
        case_from_hydra(cfg, cfg.hydra)
    assert str(where / "variant" / "oa_only.yaml") in one_line(err)
    assert "rename the file (e.g. oa_only_mine.yaml, with its `name` key)" in str(err.value)


@pytest.fixture
def mine_file(tmp_path) -> Path:
    """`tmp_path/mine/mine.yaml`: the checkout variant `MINE` as a file of its own, without a `name` key."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "mine.yaml").write_text(MINE)
    return tmp_path / "mine" / "mine.yaml"


def test_a_variant_file_given_by_path_is_reported_under_its_stem(mine_file, caplog):
    """In `retrofit.compare`'s `variant` column and on the console (the retrofit report's line), a
    file is its stem, as the sweep names it; a spec without a name is its adapters."""
    frame = houses()
    spec = {"adapters": ["o_attention"], "tau": {"mode": "calibrated", "c": 0.01}, "eps_den": 1e-3}
    rows = retrofit.compare(frame, "price", variants=[mine_file, spec], n_estimators=1)
    assert list(rows.variant) == ["mine", "o_attention"]
    assert rows.rmse[0] == rows.rmse[1]  # the file and the spec are one variant under two names
    # the logger of the line itself: a job run in this process earlier may have set its own level
    with caplog.at_level(logging.INFO, logger="retrofit.patching"):
        model = retrofit.RetrofitRegressor(str(mine_file), n_estimators=1).fit(frame[["area", "rooms"]], frame.price)
    assert model.regressor_.retrofit_report_.variant.name == "mine"
    assert "retrofit variant 'mine' on" in caplog.text and str(mine_file) not in caplog.text


def test_a_variant_file_whose_stem_is_a_built_in_name_is_refused_in_one_line(tiny_v3_fitted, tmp_path):
    (tmp_path / "oa_only.yaml").write_text(MINE)
    with pytest.raises(RetrofitError, match=r"would be reported as 'oa_only', the name of a built-in variant; ") as err:
        retrofit.retrofit(tiny_v3_fitted[0], tmp_path / "oa_only.yaml")
    assert one_line(err).endswith("rename the file (e.g. oa_only_mine.yaml)")


@pytest.mark.parametrize("twins", ["two-files", "a-spec-named-as-a-built-in"])
def test_two_variants_of_one_name_in_a_run_are_refused_before_any_fit(mine_file, tmp_path, monkeypatch, twins):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.yaml").write_text(MINE.replace("0.01", "0.1"))
    spec = {"name": "oa_only", "adapters": ["o_attention"]} | {"tau": {"mode": "calibrated", "c": 0.1}, "eps_den": 1e-3}
    variants = [mine_file, tmp_path / "other" / "mine.yaml"] if twins == "two-files" else ["oa_only", spec]
    monkeypatch.setattr(comparison, "fit_host", lambda *a, **k: pytest.fail("fitted before the refusal"))
    frame = houses()
    with pytest.raises(RetrofitError, match=r"^variants .* are all named '(mine|oa_only)', so their rows") as err:
        retrofit.compare(frame, "price", variants=variants, n_estimators=1)
    assert one_line(err).endswith("give each its own name (a file its own stem, a spec its own `name`)")
