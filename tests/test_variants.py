"""`retrofit.variants`: variant files and specs resolve, are checked once and refused with the reason."""

import pytest

from retrofit import variants
from retrofit.adapters import AttentionSettings
from retrofit.errors import RetrofitError
from retrofit.patching import retrofit
from retrofit.variants import available_variants, load_variant, resolve_variant, typed_spec


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
        ({"name": "x", "adapters": ["o_ffn"]}, {}, "needs both 'tau' and 'eps_den'"),
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
