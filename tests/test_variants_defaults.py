"""A variant's defaults live in `retrofit.variants.VariantConfig` alone: a dict, an OmegaConf node, a file
given by path and a search-path file that omit a key all get the same value, the one the built-in
files write out; `adapters` has no default, and a refusal names the key that is missing or null."""

from dataclasses import replace

import pytest
from omegaconf import OmegaConf
from refusals import one_line
from synthetic import houses

import retrofit
from retrofit.adapters import TauRule
from retrofit.errors import RetrofitError, RunnerError
from retrofit.runner.sweep_config import BUILTIN_SEARCHPATH, case_from_hydra
from retrofit.variants import resolve_variant

LEAN = "adapters: [o_attention]\n"
"""A variant that says only what it replaces."""


def test_every_kind_of_variant_that_omits_a_key_gets_the_one_default(tmp_path, hydra_compose):
    (tmp_path / "variant").mkdir()
    (tmp_path / "variant" / "lean.yaml").write_text(LEAN)
    cfg = hydra_compose("sweep", ["variant=lean", f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path}]"])
    _, swept = case_from_hydra(cfg, cfg.hydra).units
    given = {
        "dict": resolve_variant({"adapters": ["o_attention"]}),
        "node": resolve_variant(OmegaConf.create(LEAN)),
        "file": resolve_variant(tmp_path / "variant" / "lean.yaml"),
        "search path": swept.resolved(),
    }
    assert {kind: variant.name for kind, variant in given.items()} == {
        "dict": "o_attention",
        "node": "o_attention",
        "file": "lean",
        "search path": "lean",
    }
    builtin = resolve_variant("oa_only")  # the built-in file writes every key out
    assert builtin.tau == TauRule("calibrated", c=1e-3) and (builtin.eps_den, builtin.eps_mode) == (1e-6, "absolute")
    assert all(replace(variant, name="oa_only") == builtin for variant in given.values())
    assert not builtin.compact and not builtin.closed


def test_a_dict_variant_runs_in_compare_and_the_estimator_with_the_defaults():
    frame = houses()
    rows = retrofit.compare(frame, "price", variants=[{"adapters": ["o_attention"]}, "oa_only"], n_estimators=1)
    assert list(rows.variant) == ["o_attention", "oa_only"] and rows.rmse[0] == rows.rmse[1]
    assert rows.rmse[0] != rows.baseline_rmse[0]  # it patched
    model = retrofit.RetrofitRegressor({"adapters": ["o_attention"]}, n_estimators=1)
    variant = model.fit(frame[["area", "rooms"]], frame.price).regressor_.retrofit_report_.variant
    assert (variant.tau.c, variant.eps_den, variant.eps_mode) == (1e-3, 1e-6, "absolute")


def test_a_tau_rule_given_replaces_the_default_rule_whole():
    """An absolute rule keeps no `c` of the default calibrated one; a rule without its mode is refused."""
    absolute = resolve_variant({"adapters": ["o_attention"], "tau": {"mode": "absolute", "value": 0.5}})
    assert absolute.tau == TauRule("absolute", value=0.5) and absolute.tau.c is None
    assert resolve_variant({"adapters": ["o_attention"], "tau": 0.01}).tau == TauRule("calibrated", c=0.01)
    with pytest.raises(RetrofitError, match=r"tau.mode must be 'absolute' or 'calibrated', got None"):
        resolve_variant({"adapters": ["o_attention"], "tau": {"c": 0.01}})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"name": "x", "tau": 0.01},
            r"^variant 'x' has no 'adapters': list the registered adapters it applies, e\.g\. ",
        ),
        (
            {"adapters": ["o_ffn"], "eps_den": None},
            r"^variant 'o_ffn' patches \['o_ffn'\] and sets eps_den: null; .*default \(eps_den: 1e-06\)$",
        ),
        (
            {"adapters": ["o_ffn"], "tau": None},
            r"sets tau: null; give it a value, or drop the key for its default "
            r"\(tau: \{'mode': 'calibrated', 'c': 0\.001\}\)$",
        ),
        ({"adapters": ["o_ffn"], "eps_mode": None}, r"sets eps_mode: null; .*\(eps_mode: absolute\)$"),
    ],
    ids=["no-adapters", "null-eps_den", "null-tau", "null-eps_mode"],
)
def test_a_key_without_a_value_is_named_in_one_line(spec, message):
    with pytest.raises(RetrofitError, match=message) as err:
        resolve_variant(spec)
    one_line(err)


def test_a_variant_file_without_adapters_is_refused_naming_the_key(tmp_path, hydra_compose):
    (tmp_path / "variant").mkdir()
    (tmp_path / "variant" / "vague.yaml").write_text("tau: 0.01\n")
    with pytest.raises(RetrofitError, match=r"variant 'vague' has no 'adapters'"):
        resolve_variant(tmp_path / "variant" / "vague.yaml")
    cfg = hydra_compose("sweep", ["variant=vague", f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path}]"])
    with pytest.raises(RunnerError, match=r"^variant=vague: variant '<unnamed>' has no 'adapters'"):
        case_from_hydra(cfg, cfg.hydra)
