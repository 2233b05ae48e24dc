"""`retrofit.patching`: retrofit and unpatch on tiny random hosts of every supported architecture
(fast), the report of what they took over, and on the shipped hosts (slow); an unfitted regressor is
refused; a constant target predicts the constant under every variant, as stock tabpfn does."""

import copy
import re
from functools import partial

import numpy as np
import pytest
import torch
from refusals import one_line
from synthetic import frozen_stock, regression_data, small_regression_data
from tabpfn import TabPFNRegressor
from torch import nn

from retrofit import RetrofitRegressor, predict_many
from retrofit.adapters import ARCHITECTURES, KV_CACHE_REFUSAL, OBlock, architecture_of
from retrofit.errors import RetrofitError
from retrofit.hosts import available, get_path, make_regressor
from retrofit.hosts.validation import architecture_name
from retrofit.patching import retrofit, unpatch
from retrofit.variants import available_variants, resolve_variant

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


@pytest.mark.parametrize("arch", ARCHS)
def test_baseline_is_bitwise_the_frozen_stock(fitted, arch):
    regressor, X_test = fitted(arch)
    baseline = retrofit(regressor, "baseline")
    assert np.array_equal(baseline.predict(X_test), frozen_stock(regressor).predict(X_test))


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2_6"])
@pytest.mark.parametrize("variant", ["oa_only", "full_o"])
def test_unpatch_restores_state_dict_and_predictions(fitted, arch, variant):
    regressor, X_test = fitted(arch)
    stock = frozen_stock(regressor)
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
    assert np.array_equal(norm_only.predict(X[60:]), frozen_stock(regressor).predict(X[60:]))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_norm_without_bias_is_left_to_the_host(fitted, arch):
    regressor, X_test = fitted(arch)
    norm_only = retrofit(regressor, NORM_ONLY)
    assert len(norm_only.retrofit_report_.blocks) == 2 and norm_only.retrofit_report_.patched == ()
    assert np.array_equal(norm_only.predict(X_test), frozen_stock(regressor).predict(X_test))


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
    stock = frozen_stock(biased).predict(X_test)
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
    stock = frozen_stock(regressor).predict(X_test)
    delta = np.abs(retrofit(regressor, variant).predict(X_test) - stock).max() / np.abs(stock).max()
    assert 1e-7 < delta < 1e-2


@pytest.mark.parametrize("arch", ["tabpfn_v3", "tabpfn_v2_5"])
def test_presence_one_recovers_the_stock_block(fitted, arch):
    """tau -> 0 makes p = 1 on every carrier: OAttention/OFFN/ONorm reduce to the stock maps."""
    regressor, X_test = fitted(arch)
    stock = frozen_stock(regressor).predict(X_test)
    exact = retrofit(regressor, "full_o", tau={"mode": "absolute", "value": 1e-30}, eps_den=1e-30)
    assert np.allclose(exact.predict(X_test), stock, rtol=0, atol=1e-5 * np.abs(stock).max())


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


@pytest.mark.parametrize(
    ("variant", "hparams", "message"),
    [
        (
            "baseline",
            {"tau": 0.1},
            r"^retrofit: variant 'baseline' does not use tau=0\.1 \(it uses no hyper-parameter\); drop tau=",
        ),
        (
            {"name": "ffn", "adapters": ["o_ffn"]},
            {"eps_den": 1e-3},
            r"variant 'ffn' does not use eps_den=0\.001 \(it uses \['tau'\]\)",
        ),
    ],
)
def test_a_hyper_parameter_the_variant_does_not_use_is_refused_by_retrofit_as_by_the_estimator(
    fitted, variant, hparams, message
):
    """retrofit(fitted, "baseline", tau=0.1) returned the stock host, the tau taken and unused."""
    regressor, _ = fitted("tabpfn_v3")
    with pytest.raises(RetrofitError, match=message) as err:
        retrofit(regressor, variant, **hparams)
    one_line(err)


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
    stock = frozen_stock(regressor).predict(X_test)
    variants = [v for v in available_variants() if v != "baseline"]
    supported = [v for v in variants if not ARCHITECTURES[arch].refusal(resolve_variant(v))]
    assert {"oa_only", "full_o"} <= set(supported)
    for variant in supported:
        predicted = retrofit(regressor, variant, **IDENTITY).predict(X_test)
        assert np.abs(predicted - stock).max() <= 1e-5 * np.abs(stock).max(), variant


def test_unpatch_of_an_unfitted_regressor_is_refused():
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted TabPFNRegressor: this one is not fitted"):
        unpatch(make_regressor(get_path("tiny_v3")))
    with pytest.raises(RetrofitError, match=r"unpatch needs a fitted tabpfn.TabPFNRegressor, got RetrofitRegressor"):
        unpatch(RetrofitRegressor())


def test_o_closed_on_a_constant_target_predicts_the_constant_like_stock_tabpfn():
    """Stock tabpfn predicts a constant target without running a model; so does every variant."""
    X, _ = small_regression_data()
    stock = make_regressor(get_path("tiny_v3"), n_estimators=1).fit(X[:40], np.full(40, 2.5))
    expected = stock.predict(X[40:])
    np.testing.assert_array_equal(expected, np.full(20, 2.5))
    for variant in ("baseline", "full_o", "o_closed"):
        patched = retrofit(stock, variant)
        np.testing.assert_array_equal(patched.predict(X[40:]), expected)
    assert patched.retrofit_report_.closed
    np.testing.assert_array_equal(predict_many([(patched, X[40:])])[0], expected)
    restored = unpatch(patched)
    assert type(restored) is TabPFNRegressor and not any(type(m).__name__.startswith("O") for m in restored.models_)
