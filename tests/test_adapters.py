"""Retrofit adapters on tiny random hosts of every supported architecture (fast), and the
report of what they took over on the shipped hosts (slow)."""

import copy
import re
import weakref
from functools import partial

import numpy as np
import pytest
import torch
from synthetic import fit_synthetic, regression_data
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit import variants
from retrofit.adapters import (
    ARCHITECTURES,
    KV_CACHE_REFUSAL,
    AttentionSettings,
    OBlock,
    TauRule,
    architecture_of,
    in_context_blocks,
)
from retrofit.adapters.block import unaccounted
from retrofit.adapters.tabpfn_v3 import OICLBlockV3
from retrofit.errors import RetrofitError
from retrofit.hosts import available, get_path, make_regressor
from retrofit.hosts.validation import architecture_name
from retrofit.ops.presence import squared_norm
from retrofit.patching import retrofit, unpatch
from retrofit.variants import available_variants, load_variant, resolve_variant, typed_spec

ARCHS = ["tabpfn_v3", "tabpfn_v3_5", "tabpfn_v2", "tabpfn_v2_5", "tabpfn_v2_6"]
TAKEN_OVER = {  # (arch, variant) -> (submodule, adapter) taken over in every in-context block
    ("tabpfn_v3", "baseline"): (),
    ("tabpfn_v3", "oa_only"): (("icl_attention", "o_attention"),),
    # the pre-norms are RMSNorms: no bias, 0 -> 0 already, so ONorm leaves them to the host
    ("tabpfn_v3", "full_o"): (("icl_attention", "o_attention"), ("mlp", "o_ffn")),
    ("tabpfn_v3_5", "oa_only"): (("icl_attention", "o_attention"),),
    ("tabpfn_v3_5", "full_o"): (("icl_attention", "o_attention"), ("mlp", "o_ffn")),
    ("tabpfn_v2", "baseline"): (),
    ("tabpfn_v2", "oa_only"): (("per_column_attention_between_cells", "o_attention"),),
    # the post-norms are LayerNorms without elementwise affine: no bias either
    ("tabpfn_v2", "full_o"): (("per_column_attention_between_cells", "o_attention"), ("mlp", "o_ffn")),
}
IDENTITY = {"tau": {"mode": "calibrated", "c": 1e-9}, "eps_mode": "relative"}
"""Presences round to 1 and the sink scales with the row's own mass: every variant is the stock map."""
NORM_ONLY = {"name": "o_norm_only", "adapters": ["o_norm"], "tau": {"mode": "calibrated", "c": 1e-3}, "eps_den": 1e-6}


_data = partial(regression_data, n=80)


@pytest.fixture(scope="module")
def fitted(make_random_host):
    """arch -> (fitted float32 regressor on a tiny random host, X_test)."""
    cache = {}

    def make(arch: str, **overrides) -> tuple[TabPFNRegressor, np.ndarray]:
        key = (arch, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = fit_synthetic(make_random_host(arch), n=80, **overrides)
        return cache[key]

    return make


def _frozen_stock(regressor: TabPFNRegressor) -> TabPFNRegressor:
    """The stock regressor with frozen parameters: tabpfn picks other CPU kernels for frozen
    weights (1e-7-level differences), so 'stock' means frozen, like every retrofitted clone."""
    stock = copy.deepcopy(regressor)
    for model in stock.models_:
        model.requires_grad_(False)
    return stock


@pytest.mark.parametrize("arch", ARCHS)
def test_baseline_is_bitwise_the_frozen_stock(fitted, arch):
    regressor, X_test = fitted(arch)
    baseline = retrofit(regressor, "baseline")
    assert np.array_equal(baseline.predict(X_test), _frozen_stock(regressor).predict(X_test))


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2_6"])
@pytest.mark.parametrize("variant", ["oa_only", "full_o"])
def test_unpatch_restores_state_dict_and_predictions(fitted, arch, variant):
    regressor, X_test = fitted(arch)
    stock = _frozen_stock(regressor)
    patched = retrofit(regressor, variant)
    assert any(k.endswith("base_layer.mlp.0.weight") for k in patched.models_[0].state_dict())
    restored = unpatch(patched)
    for (name, a), (name_b, b) in zip(
        stock.models_[0].state_dict().items(), restored.models_[0].state_dict().items(), strict=True
    ):
        assert name == name_b and torch.equal(a, b)
    assert np.array_equal(restored.predict(X_test), stock.predict(X_test))
    assert not hasattr(restored, "retrofit_report_")


def _taken_over(regressor: TabPFNRegressor, arch: str, variant: str) -> list[tuple[str, str]]:
    """(path, adapter) that `variant` should take over in every in-context block of `regressor`."""
    blocks = ARCHITECTURES[arch].blocks
    n_blocks = len(regressor.models_[0].get_submodule(blocks))
    return [(f"{blocks}.{i}.{name}", adapter) for i in range(n_blocks) for name, adapter in TAKEN_OVER[(arch, variant)]]


@pytest.mark.parametrize(("arch", "variant"), sorted(TAKEN_OVER))
def test_report_lists_exactly_the_modules_taken_over(fitted, arch, variant):
    regressor, _ = fitted(arch)
    report = retrofit(regressor, variant).retrofit_report_
    assert [(m.path, m.adapter) for m in report.patched] == _taken_over(regressor, arch, variant)
    assert report.counts()["norm"] == 0 and report.architectures == (arch,)
    assert len(report.blocks) == (0 if variant == "baseline" else 2)


@pytest.mark.slow
@pytest.mark.parametrize("host", available())
def test_report_on_shipped_hosts(host):
    """full_o on a shipped host takes over every in-context attention and FFN and no norm; an
    ONorm-only variant, which takes over nothing there, predicts the frozen stock bit for bit."""
    arch = architecture_name(get_path(host))
    X, y = _data()
    regressor = make_regressor(get_path(host), n_estimators=1, random_state=0).fit(X[:60], y[:60])
    report = retrofit(regressor, "full_o").retrofit_report_
    assert [(m.path, m.adapter) for m in report.patched] == _taken_over(regressor, arch, "full_o")
    n_blocks = len(report.blocks)
    assert n_blocks == len(regressor.models_[0].get_submodule(ARCHITECTURES[arch].blocks)) >= 3
    assert report.counts() == {"attention": n_blocks, "ffn": n_blocks, "norm": 0}
    norm_only = retrofit(regressor, NORM_ONLY)
    assert norm_only.retrofit_report_.patched == ()
    assert np.array_equal(norm_only.predict(X[60:]), _frozen_stock(regressor).predict(X[60:]))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_norm_without_bias_is_left_to_the_host(fitted, arch):
    regressor, X_test = fitted(arch)
    norm_only = retrofit(regressor, NORM_ONLY)
    assert len(norm_only.retrofit_report_.blocks) == 2 and norm_only.retrofit_report_.patched == ()
    assert np.array_equal(norm_only.predict(X_test), _frozen_stock(regressor).predict(X_test))


def test_a_norm_with_bias_is_taken_over(fitted):
    """Affine LayerNorms with a bias in the v2 blocks: ONorm takes all three over per block and
    moves the prediction; tau -> 0 (presence 1, bias kept whole) gives the stock back bit for bit."""
    regressor, X_test = fitted("tabpfn_v2")
    biased = copy.deepcopy(regressor)
    generator = torch.Generator().manual_seed(0)
    for block in biased.models_[0].blocks:
        for name, norm in list(block.named_children()):
            if isinstance(norm, nn.LayerNorm):
                setattr(block, name, nn.LayerNorm(norm.normalized_shape))
                nn.init.normal_(getattr(block, name).bias, generator=generator)
    stock = _frozen_stock(biased).predict(X_test)
    patched = retrofit(biased, NORM_ONLY)
    norms = ("layernorm_mha1", "layernorm_mha2", "layernorm_mlp")
    expected = [(f"blocks.{i}.{name}", "norm") for i in range(2) for name in norms]
    assert [(m.path, m.part) for m in patched.retrofit_report_.patched] == expected
    delta = np.abs(patched.predict(X_test) - stock).max() / np.abs(stock).max()
    assert 1e-6 < delta < 1e-2
    exact = retrofit(biased, NORM_ONLY, tau={"mode": "absolute", "value": 1e-30}).predict(X_test)
    assert np.array_equal(exact, stock)


def test_original_regressor_untouched(fitted):
    """retrofit works on a copy: the original keeps its module objects, state, trainable flags,
    class and predictions; the patched copy shares its frozen weights' storage."""
    regressor, X_test = fitted("tabpfn_v3")
    modules = dict(regressor.models_[0].named_modules())
    before = {k: v.clone() for k, v in regressor.models_[0].state_dict().items()}
    trainable = [p.requires_grad for p in regressor.models_[0].parameters()]
    prediction = regressor.predict(X_test)
    patched = retrofit(regressor, "full_o")
    assert type(regressor) is TabPFNRegressor and not hasattr(regressor, "retrofit_report_")
    after = dict(regressor.models_[0].named_modules())
    assert after.keys() == modules.keys() and all(after[name] is module for name, module in modules.items())
    assert not any(isinstance(module, OBlock) for module in after.values())
    assert [p.requires_grad for p in regressor.models_[0].parameters()] == trainable and any(trainable)
    assert not any(p.requires_grad for p in patched.models_[0].parameters())
    assert all(torch.equal(before[k], v) for k, v in regressor.models_[0].state_dict().items())
    # The frozen weights are shared, not copied: the same storage behind distinct tensor objects.
    original = {p.data_ptr(): p for p in regressor.models_[0].parameters()}
    shared = [p for p in patched.models_[0].parameters() if p.data_ptr() in original]
    assert len(shared) == len(original) and not any(p is original[p.data_ptr()] for p in shared)
    assert np.array_equal(regressor.predict(X_test), prediction)
    assert all(torch.equal(before[k], v) for k, v in regressor.models_[0].state_dict().items())


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2"])
@pytest.mark.parametrize("variant", ["oa_only", "full_o"])
def test_variants_change_predictions_a_little(fitted, arch, variant):
    regressor, X_test = fitted(arch)
    stock = _frozen_stock(regressor).predict(X_test)
    delta = np.abs(retrofit(regressor, variant).predict(X_test) - stock).max() / np.abs(stock).max()
    assert 1e-7 < delta < 1e-2


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2_5"])
def test_presence_one_recovers_the_stock_block(fitted, arch):
    """tau -> 0 makes p = 1 on every carrier: OAttention/OFFN/ONorm reduce to the stock maps."""
    regressor, X_test = fitted(arch)
    stock = _frozen_stock(regressor).predict(X_test)
    exact = retrofit(regressor, "full_o", tau={"mode": "absolute", "value": 1e-30}, eps_den=1e-30)
    assert np.allclose(exact.predict(X_test), stock, rtol=0, atol=1e-5 * np.abs(stock).max())


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v3_5", "tabpfn_v2"])
def test_chunked_block_equals_unchunked(fitted, arch):
    regressor, _ = fitted(arch)
    patched = retrofit(regressor, "full_o")
    spec = architecture_of(patched.models_[0])
    block = patched.models_[0].get_submodule(spec.blocks)[0]
    shape = {"tabpfn_v3": (4, 20, 128), "tabpfn_v3_5": (4, 20, 64), "tabpfn_v2": (4, 20, 3, 32)}[arch]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        whole, _ = block(x.clone(), 15, None)
        chunked, _ = block(x.clone(), 15, 3)
    # same mathematics; only the matrix-multiply batch sizes (hence rounding) differ
    torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-6 * float(whole.abs().max()))


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2"])
def test_a_block_releases_its_input_once_used(fitted, arch):
    """Given its input in a one-element list (as tabpfn's v2 models pass it), a wrapped block holds
    no reference to it by the time its FFN runs: the input's memory is free for the rest of the
    block, as in the stock block."""
    regressor, _ = fitted(arch)
    patched = retrofit(regressor, "full_o")
    block = patched.models_[0].get_submodule(architecture_of(patched.models_[0]).blocks)[0]
    shape = {"tabpfn_v3": (2, 20, 128), "tabpfn_v2": (2, 20, 3, 32)}[arch]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    alive_at_ffn = []
    with torch.no_grad():
        expected, _ = block(x.clone(), 15)
        container = [x.clone()]
        input_ref = weakref.ref(container[0])
        hook = block.base_layer.mlp.register_forward_pre_hook(lambda *_: alive_at_ffn.append(input_ref() is not None))
        try:
            out, _ = block(container, 15)
        finally:
            hook.remove()
    assert container == [] and alive_at_ffn == [False]
    assert torch.equal(out, expected)


def test_tau_of_squared_norms_is_tau_of_the_carriers():
    """A block computes each carrier's squared norms once, for its tau and its presence: the same bits."""
    h_BXE = torch.randn(3, 11, 8, generator=torch.Generator().manual_seed(0))
    h_BXE[1, 2:5] = 0
    for rule in (TauRule("calibrated", c=1e-3), TauRule("absolute", value=0.5)):
        assert torch.equal(rule.tau_of_squared(squared_norm(h_BXE)), rule.tau(h_BXE))


def test_tau_calibration_ignores_null_carriers():
    rule = TauRule("calibrated", c=1e-3)
    h_BXE = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(0))
    with_nulls = torch.cat([h_BXE[:, :4], torch.zeros(2, 5, 8), h_BXE[:, 4:]], dim=1)
    assert torch.equal(rule.tau(h_BXE), rule.tau(with_nulls))
    median = h_BXE.square().sum(-1).median(dim=1).values
    assert torch.allclose(rule.tau(h_BXE), 1e-3 * median)


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


def test_refusals(fitted):
    regressor, _ = fitted("tabpfn_v3")
    with pytest.raises(RetrofitError, match="cannot retrofit a Linear"):
        architecture_of(torch.nn.Linear(2, 2))
    with pytest.raises(RetrofitError, match=re.escape("call .fit")):
        retrofit(TabPFNRegressor(), "full_o")
    with pytest.raises(RetrofitError, match="already retrofitted"):
        retrofit(retrofit(regressor, "oa_only"), "full_o")
    cached, _ = fitted("tabpfn_v3", fit_mode="fit_with_cache")
    with pytest.raises(RetrofitError, match="fit_with_cache"):
        retrofit(cached, "full_o")
    block = retrofit(regressor, "full_o").models_[0].icl_blocks[0]
    for kv_cache in ({"return_kv": True}, {"cached_kv": object()}):
        with pytest.raises(RuntimeError, match=re.escape(KV_CACHE_REFUSAL)):
            block(torch.zeros(1, 4, 128), 2, None, **kv_cache)
    with pytest.raises(RetrofitError, match="subclass Subclassed"):
        retrofit(type("Subclassed", (TabPFNRegressor,), {})(**regressor.get_params()).fit(*_data()), "full_o")


def test_unknown_architecture_is_refused_before_anything_is_patched(fitted, monkeypatch):
    regressor, _ = fitted("tabpfn_v2")
    monkeypatch.setitem(
        ARCHITECTURES,
        "tabpfn_v2",
        ARCHITECTURES["tabpfn_v2"].__class__(**{**vars(ARCHITECTURES["tabpfn_v2"]), "module": "not.tabpfn_v2"}),
    )
    with pytest.raises(RetrofitError, match="Supported architectures"):
        retrofit(regressor, "full_o")
    assert not any("base_layer" in k for k in regressor.models_[0].state_dict())


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_identity_check_reproduces_the_stock_host_for_every_variant(fitted, arch):
    """Contract: presences -> 1 with the relative sink (tau c = 1e-9) reproduce the frozen stock
    predictions to 1e-5 relative, for every variant the architecture supports, on every
    registered architecture (a wrapper that skipped a module of the block would be ~1e-2 off)."""
    regressor, X_test = fitted(arch)
    stock = _frozen_stock(regressor).predict(X_test)
    variants = [v for v in available_variants() if v != "baseline"]
    supported = [v for v in variants if not ARCHITECTURES[arch].refusal(resolve_variant(v))]
    assert {"oa_only", "full_o"} <= set(supported)
    for variant in supported:
        predicted = retrofit(regressor, variant, **IDENTITY).predict(X_test)
        assert np.abs(predicted - stock).max() <= 1e-5 * np.abs(stock).max(), variant


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_every_registered_wrapper_accounts_for_its_whole_block(fitted, arch):
    regressor, _ = fitted(arch)
    wrapper = ARCHITECTURES[arch].wrapper
    for block in in_context_blocks(regressor.models_[0]):
        assert unaccounted(block, wrapper.required) == []


def test_the_v3_wrapper_refuses_a_v3_5_block_naming_its_query_and_key_norms(fitted):
    """v3.5's in-context attention normalises queries and keys per head; v3's wrapper reads
    neither, so running it there would compute another map: it must refuse, by name."""
    regressor, _ = fitted("tabpfn_v3_5")
    block = in_context_blocks(regressor.models_[0])[0]
    message = r"holds \['icl_attention.q_norm', 'icl_attention.k_norm'\].*update the spec and wrapper"
    with pytest.raises(RetrofitError, match=message):
        OICLBlockV3(block, frozenset({"attention"}), TauRule("calibrated", c=1e-3), AttentionSettings(1e-6))


def test_a_block_with_a_parameter_or_submodule_no_wrapper_reads_is_refused(fitted):
    """Parameters added to re-implemented submodules (the attention, its softmax scaling) and a new
    submodule of the block are named (the submodule once, not its contents); retrofit refuses
    before anything is swapped."""
    regressor, _ = fitted("tabpfn_v3")
    grown = copy.deepcopy(regressor)
    block = in_context_blocks(grown.models_[0])[1]
    block.icl_attention.gate = nn.Parameter(torch.ones(4))
    block.icl_attention.softmax_scaling_layer.temperature = nn.Parameter(torch.ones(1))
    block.extra_norm = nn.LayerNorm(8)
    stray = ["extra_norm", "icl_attention.gate", "icl_attention.softmax_scaling_layer.temperature"]
    assert sorted(unaccounted(block, OICLBlockV3.required)) == stray
    with pytest.raises(RetrofitError, match=re.escape(str(stray))):
        retrofit(grown, "oa_only")
    assert not any(isinstance(m, OBlock) for m in grown.models_[0].modules())


def test_retrofit_regressor_runs_full_o_on_a_v3_5_host(fitted):
    """`RetrofitRegressor` on a v3.5 checkpoint predicts what retrofitting the stock fit predicts."""
    from retrofit import RetrofitRegressor

    regressor, X_test = fitted("tabpfn_v3_5")
    X, y = _data()
    path = regressor.model_path
    estimator = RetrofitRegressor("full_o", model_path=path, n_estimators=1, random_state=0, device="cpu").fit(
        X[:60], y[:60]
    )
    assert estimator.regressor_.retrofit_report_.architectures == ("tabpfn_v3_5",)
    np.testing.assert_array_equal(estimator.predict(X_test), retrofit(regressor, "full_o").predict(X_test))


EPS_DEN = "eps_den must be a finite number > 0"


@pytest.mark.parametrize(
    ("settings", "message", "as_hparams"),
    [
        ({"eps_den": 0.0}, EPS_DEN, True),
        ({"eps_den": -1e-6}, EPS_DEN, True),
        ({"eps_den": float("inf")}, EPS_DEN, True),
        ({"eps_den": float("nan")}, EPS_DEN, True),
        ({"eps_den": 1e-6, "eps_mode": "softmax"}, r"eps_mode must be one of \('absolute', 'relative'\)", True),
        # what the variant schema already types (a bool or a string for eps_den, "yes" for compact):
        ({"eps_den": True}, EPS_DEN, False),
        ({"eps_den": "1e-6"}, EPS_DEN, False),
        ({"eps_den": 1e-6, "compact": "yes"}, "compact must be true or false", False),
    ],
)
def test_attention_settings_refuse_bad_values_and_every_variant_goes_through_them(settings, message, as_hparams):
    with pytest.raises(RetrofitError, match=message):
        AttentionSettings(**settings)
    if as_hparams:
        with pytest.raises(RetrofitError, match=rf"variant 'oa_only': {message}"):
            resolve_variant("oa_only", **settings)


def test_a_variant_carries_one_attention_settings_object_its_wrappers_share():
    variant = resolve_variant("full_o", eps_mode="relative", compact=True)
    assert variant.attention == AttentionSettings(1e-6, "relative", True)
    assert variant.attention.kwargs() == {"eps_den": 1e-6, "eps_mode": "relative", "compact": True}
    assert resolve_variant("baseline").attention is None
