"""`retrofit.variants`: variant files and specs resolve, are checked once and refused with the reason:
a variant is a built-in name, a spec or a .yaml file; its name is a label; its eps_den is finite and
positive wherever it enters."""

import math
import os

import pytest
from refusals import one_line
from synthetic import small_regression_data

from retrofit import RetrofitRegressor, variants
from retrofit.adapters import AttentionSettings, TauRule
from retrofit.errors import RetrofitError
from retrofit.patching import retrofit
from retrofit.runner.sweep_config import case_from_hydra
from retrofit.variants import VARIANT_DIR, Variant, available_variants, load_variant, resolve_variant, typed_spec


def test_variant_files_resolve():
    assert {"baseline", "oa_only", "full_o"} <= set(available_variants())
    full_o = resolve_variant(load_variant("full_o"), tau={"mode": "calibrated", "c": 0.01}, compact=True)
    assert full_o.parts == {"attention", "ffn", "norm"} and full_o.tau.c == 0.01 and full_o.compact
    assert resolve_variant("oa_only").parts == {"attention"}
    mine = {"name": "mine", "adapters": ["o_ffn"], "tau": {"mode": "absolute", "value": 2.0}, "eps_den": 1e-6}
    assert resolve_variant(mine).tau.value == 2.0


def test_checked_specs_are_new_objects_and_refusals_repeat():
    """`typed_spec` checks a spec once per process: a caller that edits its result must not change
    the next caller's, and a bad spec is refused every time."""
    first = typed_spec(load_variant("full_o"))
    first["tau"]["c"] = 123.0
    first["adapters"].append("o_magic")
    again = typed_spec(load_variant("full_o"))
    assert again["tau"]["c"] != 123.0 and "o_magic" not in again["adapters"]
    assert resolve_variant("full_o").tau.c == again["tau"]["c"]
    for _ in range(2):
        with pytest.raises(RetrofitError, match="compact"):
            typed_spec({"name": "x", "compact": "not a flag"})
    with pytest.raises(RetrofitError, match="closed"):
        typed_spec({"name": "x", "closed": [1]})


def test_a_built_in_variant_file_is_read_as_it_is_now(monkeypatch, tmp_path):
    """The built-in specs are parsed once per file text: an edited file is read again."""
    monkeypatch.setattr(variants, "VARIANT_DIR", tmp_path)
    for c in (0.5, 0.25):
        (tmp_path / "mine.yaml").write_text(
            f"adapters: [o_attention]\ntau: {{mode: calibrated, c: {c}}}\neps_den: 1.0e-6\n"
        )
        assert resolve_variant("mine").tau.c == c


@pytest.mark.parametrize(
    ("variant", "hparams", "message"),
    [
        ("nope", {}, "unknown variant 'nope'"),
        ("full_o", {"tua": 1}, "unknown retrofit hyper-parameters"),
        ({"name": "x", "adapters": ["o_magic"]}, {}, "unknown adapter 'o_magic'"),
        ("full_o", {"tau": {"mode": "calibrated", "c": -1}}, "needs tau.c > 0"),
        ("full_o", {"tau": {"mode": "relative", "c": 1}}, "tau.mode must be"),
        ({"name": "x", "adapters": ["o_ffn"], "tau": None}, {}, r"patches \['o_ffn'\] and sets tau: null; give it"),
        ({"name": "x", "tau": 0.01}, {}, r"variant 'x' has no 'adapters': list the registered adapters it applies"),
        (
            {"name": "x", "adapters": "o_ffn"},  # was "bad key 'adapters' (... AnyNode is not a ListConfig ...)"
            {},
            r"^variant 'x': adapters must be a list of adapter names, got the string 'o_ffn'; write adapters: \[o_ffn",
        ),
    ],
)
def test_bad_variants_are_refused(fitted, variant, hparams, message):
    regressor, _ = fitted("tabpfn_v3")
    with pytest.raises(RetrofitError, match=message):
        retrofit(regressor, variant, **hparams)


def test_a_variant_carries_one_attention_settings_object_its_wrappers_share():
    variant = resolve_variant("full_o", eps_mode="relative", compact=True)
    assert variant.attention == AttentionSettings(1e-6, "relative", True)
    assert variant.attention.kwargs() == {"eps_den": 1e-6, "eps_mode": "relative", "compact": True}
    assert resolve_variant("baseline").attention is None


def test_a_bare_number_tau_that_is_not_a_number_is_refused_on_the_command_line_in_one_line(hydra_compose):
    cfg = hydra_compose("sweep", ["variant=oa_only", "variant.tau=abc"])
    with pytest.raises(RetrofitError, match=r"^variant=oa_only: tau must be a number \(c of the calibrated rule"):
        case_from_hydra(cfg, cfg.hydra)


@pytest.mark.parametrize("variant", [42, None, 1.5, ["full_o"]])
def test_variant_that_is_neither_name_spec_nor_file_is_refused(tiny_v3_fitted, variant):
    with pytest.raises(RetrofitError, match=r"a variant is a built-in name .*a spec \(a mapping\), or a \.yaml"):
        retrofit(tiny_v3_fitted[0], variant)


def test_variant_string_that_is_a_path_is_not_loaded(tiny_v3_fitted, tmp_path):
    """A string without .yaml is a name: neither a file nor a path into the built-in folder is read."""
    (tmp_path / "evil.yaml").write_text("name: full_o\nadapters: []\n")
    escape = os.path.relpath(tmp_path / "evil", VARIANT_DIR)
    for variant in (str(tmp_path / "evil"), escape):
        with pytest.raises(RetrofitError, match=r"unknown variant .*built-in: \["):
            retrofit(tiny_v3_fitted[0], variant)


def test_variant_file_is_reported_under_its_file_names_stem(tiny_v3_fitted, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text((VARIANT_DIR / "oa_only.yaml").read_text().replace("name: oa_only\n", ""))
    for given in (str(path), path):
        report = retrofit(tiny_v3_fitted[0], given).retrofit_report_
        assert report.variant.name == "mine" and report.variant.adapters == ("o_attention",)
        assert len(report.patched) > 0


def test_variant_file_calling_itself_a_built_in_is_refused(tiny_v3_fitted, tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("name: full_o\nadapters: []\n")
    with pytest.raises(RetrofitError, match=r"calls itself 'full_o'.*under its file name's stem 'evil'.*to 'evil'"):
        retrofit(tiny_v3_fitted[0], str(path))
    with pytest.raises(RetrofitError, match=r"variant file .*nowhere\.yaml does not exist"):
        retrofit(tiny_v3_fitted[0], str(tmp_path / "nowhere.yaml"))


@pytest.mark.parametrize("eps_den", [math.inf, -math.inf, math.nan, 0.0, -1e-6])
def test_eps_den_must_be_finite_and_positive_wherever_it_enters(tiny_v3_fitted, eps_den):
    """A non-finite or non-positive eps_den is refused where it enters: retrofit, the estimator, a spec, a Variant
    (an infinite one once ran and was recorded as a result)."""
    message = r"eps_den must be a finite number > 0"
    with pytest.raises(RetrofitError, match=message):
        retrofit(tiny_v3_fitted[0], "full_o", eps_den=eps_den)
    with pytest.raises(RetrofitError, match=message):
        resolve_variant({"adapters": ["o_attention"], "tau": {"mode": "calibrated", "c": 1e-3}, "eps_den": eps_den})
    with pytest.raises(RetrofitError, match=message):
        RetrofitRegressor("oa_only", eps_den=eps_den, n_estimators=1, device="cpu").fit(*small_regression_data())
    with pytest.raises(RetrofitError, match=message):
        Variant("direct", ("o_attention",), TauRule("calibrated", c=1e-3), eps_den, False, "absolute")


@pytest.mark.parametrize("name", ["x/../../../../tmp/esc", "v" * 240])
def test_variant_name_that_is_no_label_is_refused_where_the_spec_enters(name):
    """A variant named `x/../../<dir>/esc` wrote its unit file outside the cache; one of 240
    characters failed with "File name too long" after the computing."""
    spec = {"name": name, "adapters": ["o_attention"], "tau": {"mode": "calibrated", "c": 1e-2}, "eps_den": 1e-3}
    with pytest.raises(RetrofitError, match=r"variant name .*(use letters|use at most 100)") as err:
        resolve_variant(spec)
    one_line(err)
