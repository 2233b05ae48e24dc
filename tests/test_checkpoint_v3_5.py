"""tabpfn v3.5 hosts: our written files and tabpfn's own multitask format load and predict alike."""

import dataclasses
from functools import partial

import numpy as np
import pytest
import torch
from safetensors import safe_open
from synthetic import regression_data
from tabpfn import TabPFNClassifier, TabPFNRegressor
from tabpfn.architectures import tabpfn_v3_5
from tabpfn.checkpoint import save_as_safetensors

from retrofit.adapters import ARCHITECTURES
from retrofit.hosts import check_checkpoint, inference_config, make_regressor, save_host, set_borders
from retrofit.hosts.random_host import TINY_ARCHS

needs_adapter = pytest.mark.skipif(
    "tabpfn_v3_5" not in ARCHITECTURES,
    reason="check_checkpoint accepts tabpfn_v3_5 once its adapter spec is registered",
)


_data = partial(regression_data, n=120, curved=False)


def _tabpfn_regressor(path, **kw) -> TabPFNRegressor:
    """tabpfn's own loader on `path`, with `make_regressor`'s settings."""
    settings = dict(n_estimators=2, random_state=0, device="cpu", inference_precision=torch.float32)
    return TabPFNRegressor(model_path=str(path), ignore_pretraining_limits=True, **{**settings, **kw})


def _multitask_model(seed: int = 0):
    """A v3.5 model as tabpfn builds it (both heads: 3 classes and 32 buckets), branches redrawn."""
    config, unused = tabpfn_v3_5.parse_config({**TINY_ARCHS["tabpfn_v3_5"], "max_num_classes": 3})
    assert not unused
    torch.manual_seed(seed)
    model = tabpfn_v3_5.get_architecture(config)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.dim() == 2 and not weight.any():
                weight.normal_(0.0, 0.1)
    return model, config


def _write_as_tabpfn_does(path, model, config):
    """The file layout of tabpfn's published v3.5 checkpoints: one multitask `.safetensors` with the
    state dict (borders as `heads.regression_borders`), config, architecture name and inference config."""
    save_as_safetensors(
        {
            "state_dict": model.state_dict(),
            "config": dataclasses.asdict(config),
            "architecture_name": "tabpfn_v3_5",
            "inference_config": inference_config("lean"),
        },
        path,
    )
    return path


def test_random_v3_5_host_predicts_through_tabpfn_with_its_borders(make_random_host):
    path = make_random_host("tabpfn_v3_5")
    X, y = _data()
    reg = _tabpfn_regressor(path).fit(X[:80], y[:80])
    pred = reg.predict(X[80:])
    assert type(reg.models_[0]).__name__ == "TabPFNV3p5" and pred.shape == (40,) and np.isfinite(pred).all()
    # The borders set_borders wrote are the ones the loaded model predicts with (not tabpfn's spline default).
    borders = reg.models_[0].regression_borders
    torch.testing.assert_close(borders, torch.linspace(-4.0, 4.0, TINY_ARCHS["tabpfn_v3_5"]["num_buckets"] + 1))
    with safe_open(str(path), framework="pt") as fh:
        for key, value in reg.models_[0].state_dict().items():
            assert torch.equal(value, fh.get_tensor(key)), key
    np.testing.assert_array_equal(pred, _tabpfn_regressor(path).fit(X[:80], y[:80]).predict(X[80:]))


def test_save_host_writes_what_tabpfn_writes_for_v3_5(tmp_path):
    """The same weights saved by `save_host` and in tabpfn's own layout give bitwise equal
    predictions; the multitask file also backs a classifier."""
    model, config = _multitask_model()
    criterion = set_borders(model, torch.linspace(-3.0, 3.0, config.num_buckets + 1))
    ours = save_host(
        tmp_path / "ours-v3.5.safetensors", model, config, "tabpfn_v3_5", criterion, inference_config("lean")
    )
    theirs = _write_as_tabpfn_does(tmp_path / "tabpfn-v3.5-20260909.safetensors", model, config)
    X, y = _data(1)
    pred_ours = _tabpfn_regressor(ours).fit(X[:80], y[:80]).predict(X[80:])
    pred_theirs = _tabpfn_regressor(theirs).fit(X[:80], y[:80]).predict(X[80:])
    np.testing.assert_array_equal(pred_ours, pred_theirs)
    proba = TabPFNClassifier(model_path=str(theirs), n_estimators=1, device="cpu").fit(X[:80], y[:80] > 0)
    assert proba.predict_proba(X[80:]).shape == (40, 2)


@needs_adapter
def test_tabpfn_written_v3_5_file_passes_validation_and_predicts(tmp_path):
    model, config = _multitask_model(seed=2)
    set_borders(model, torch.linspace(-3.0, 3.0, config.num_buckets + 1))
    path = _write_as_tabpfn_does(tmp_path / "tabpfn-v3.5-20260909.safetensors", model, config)
    assert check_checkpoint(path) == path
    X, y = _data(2)
    pred = make_regressor(path, n_estimators=2).fit(X[:80], y[:80]).predict(X[80:])
    np.testing.assert_array_equal(pred, _tabpfn_regressor(path).fit(X[:80], y[:80]).predict(X[80:]))
