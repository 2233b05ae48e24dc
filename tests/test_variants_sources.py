"""Where a variant lives (docs/adapters.md, "Where a variant lives"): a file in the checkout's
`configs/variant/` runs by its name in the sweep, as a built-in one does."""

import math
import shutil
from pathlib import Path

import pytest

from retrofit.runner.case import run_case
from retrofit.runner.sweep_config import case_from_hydra

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
    assert (resolved.name, resolved.adapters, resolved.tau.c, resolved.eps_den) == ("mine", ("o_attention",), 0.01, 1e-3)
    rows = run_case(case)
    assert [row["variant"] for row in rows] == ["baseline", "mine"]
    assert rows[1]["tau_rule"] == "c=0.01 (calibrated)" and rows[1]["eps_den"] == 1e-3
    assert math.isfinite(rows[1]["rmse"]) and rows[1]["rmse"] != rows[0]["rmse"]  # it patched: another prediction


def test_a_variant_in_the_checkout_runs_with_every_variant_when_none_is_chosen(checkout_compose):
    cfg = checkout_compose()
    units = [unit.variant for unit in case_from_hydra(cfg, cfg.hydra).units]
    assert units == ["baseline", "full_o", "mine", "o_closed", "oa_only"]
