"""Every shipped host is stable under last-bit input changes, stock and under every variant it runs.

Another CPU's BLAS kernel changes last bits; a host whose predictions jump with them (tabpfn's
row-hash fingerprint column on a host never pretrained with it) makes a record that reproduces on
one machine only. The property tested: every numeric input times (1 +- 1e-7)
(`benchmarks.floor_movements.perturb_inputs`, both phases) moves the test RMSE by at most 1e-6
relative, on real data, for every shipped host and variant.
"""

import pathlib
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from processes import run_python
from safetensors import safe_open
from synthetic import diabetes_split
from tabpfn.constants import ModelVersion
from tabpfn.model_loading import resolve_model_version

import retrofit
from benchmarks.floor_movements import perturb_inputs
from retrofit.adapters import ARCHITECTURES, architecture_of
from retrofit.errors import RetrofitError
from retrofit.fitting import fit_host, load_split
from retrofit.hosts import (
    SHIPPED_HOSTS,
    available,
    check_checkpoint,
    get_path,
    inference_config,
    make_regressor,
    shipped,
)
from retrofit.hosts.random_host import VERSION_TAG
from retrofit.hosts.validation import architecture_name
from retrofit.metrics import rmse
from retrofit.patched import engine_models
from retrofit.variants import resolve_variant

VARIANTS = ("baseline", "oa_only", "full_o", "o_closed")


MAX_REL = 1e-6


DATASETS = ("carseats", "hitters")  # numeric and categorical columns; hitters has 19 features


def _splits(dataset_spec, name):
    _, data = load_split(dataset_spec(name), 0, base_dir=Path("."))
    return [data, perturb_inputs(data, phase=0), perturb_inputs(data, phase=1)]


def _fitted(host_path, splits, **overrides) -> list:
    """The host fitted on each split (2 members, seed 0)."""
    return [fit_host(host_path, s, random_state=0, n_estimators=2, **overrides)[0] for s in splits]


def _movements(fitted, splits, variant) -> list[float] | None:
    """Relative RMSE movements of `variant` on the fitted host under both perturbations; None when
    the host's architecture cannot run the variant."""
    if architecture_of(engine_models(fitted[0])[0]).refusal(resolve_variant(variant)):
        return None
    scores = [
        rmse(s.y_test, retrofit.retrofit(r, variant).predict(s.X_test)) for r, s in zip(fitted, splits, strict=True)
    ]
    return [abs(score - scores[0]) / scores[0] for score in scores[1:]]


def test_the_perturbation_moves_every_numeric_cell_by_1e7_and_keeps_ties_and_order(dataset_spec):
    data, plus, minus = _splits(dataset_spec, "carseats")
    numeric = [f for f in range(data.X_train.shape[1]) if f not in data.categorical_indices]
    ratio = plus.X_train[:, numeric] / data.X_train[:, numeric]
    nonzero = data.X_train[:, numeric] != 0
    assert np.allclose(np.abs(ratio[nonzero] - 1), 1e-7, rtol=1e-6)
    assert np.array_equal(
        np.sign(ratio - 1)[nonzero], -np.sign(minus.X_train[:, numeric] / data.X_train[:, numeric] - 1)[nonzero]
    )
    for f in numeric:
        column, moved = (
            np.concatenate([data.X_train[:, f], data.X_test[:, f]]),
            np.concatenate([plus.X_train[:, f], plus.X_test[:, f]]),
        )
        assert np.array_equal(np.argsort(column, kind="stable"), np.argsort(moved, kind="stable"))
        assert len(np.unique(column)) == len(np.unique(moved))
    for f in data.categorical_indices:
        assert np.array_equal(plus.X_train[:, f], data.X_train[:, f], equal_nan=True)
    assert np.array_equal(plus.y_train, data.y_train)


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("host", available())
def test_every_shipped_host_and_variant_is_stable_under_last_bit_input_changes(dataset_spec, host, dataset):
    splits = _splits(dataset_spec, dataset)
    fitted = _fitted(get_path(host), splits)
    moved = {v: _movements(fitted, splits, v) for v in VARIANTS}
    ran = {v: m for v, m in moved.items() if m is not None}
    assert {"baseline", "oa_only", "full_o"} <= set(ran)
    assert max(max(m) for m in ran.values()) <= MAX_REL, ran


@pytest.mark.slow
def test_the_fingerprint_column_breaks_stability_on_a_host_not_pretrained_with_it(dataset_spec):
    """The check can fail: tabpfn's v2.5 defaults with the fingerprint on move tiny_v3_5 by far more."""
    splits = _splits(dataset_spec, "carseats")
    fitted = _fitted(get_path("tiny_v3_5"), splits, inference_config=inference_config("v2_5_default"))
    moved = _movements(fitted, splits, "baseline")
    assert max(moved) > 100 * MAX_REL


ROOT = pathlib.Path(__file__).resolve().parents[1]


def _pretrain_config(name: str) -> dict:
    """`configs/pretrain/<name>.yaml` as written (the recipe a shipped host is trained and exported by)."""
    return yaml.safe_load((ROOT / "configs" / "pretrain" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", available())
def test_shipped_file_is_pure_safetensors_with_a_tabpfn_header(name):
    """The whole file parses as safetensors (tensors + a string header, no pickle anywhere) and
    names a registered architecture: what `check_checkpoint` and tabpfn both rely on."""
    path = get_path(name)
    assert path.suffix == ".safetensors"
    with safe_open(str(path), framework="pt", device="cpu") as fh:
        keys = list(fh.keys())
        assert keys and all(isinstance(fh.get_tensor(key), torch.Tensor) for key in keys)
        header = fh.metadata()
    assert header["architecture_name"].strip('"') in ARCHITECTURES
    assert check_checkpoint(path) == path


@pytest.mark.parametrize("name", available())
def test_tabpfn_reads_each_shipped_file_as_the_architecture_it_was_trained_as(name):
    """The file's header, the version tabpfn reads off its name (a "v3_5" name would read as v3)
    and `check_checkpoint` agree with the architecture of the host's pretraining config."""
    path = get_path(name)
    arch = _pretrain_config(name)["arch_name"]
    assert architecture_name(path) == arch
    assert resolve_model_version(path) == ModelVersion(VERSION_TAG[arch])


@pytest.mark.parametrize("name", available())
def test_a_missing_shipped_file_names_the_make_target_that_rebuilds_it(name, tmp_path, monkeypatch):
    """The hint names a Makefile target that pretrains this host, whose config exports to the
    package file `get_path` reads."""
    assert _pretrain_config(name)["export_path"] == f"retrofit/hosts/{SHIPPED_HOSTS[name]}"
    assert get_path(name) == ROOT / "retrofit" / "hosts" / SHIPPED_HOSTS[name]
    monkeypatch.setattr(shipped, "files", lambda package: tmp_path)
    with pytest.raises(RetrofitError, match=rf"shipped host '{name}' is missing .*`make (pretrain-\S+)`") as err:
        get_path(name)
    target, makefile = err.value.args[0].split("`make ")[1].split("`")[0], (ROOT / "Makefile").read_text()
    assert f"\n{target}:" in makefile, target
    recipe = makefile.split(f"\n{target}:")[1].split("\n\n")[0]
    assert f"experiments/pretrain_host.py pretrain={name}\n" in f"{recipe}\n"


@pytest.mark.parametrize("name", available())
def test_shipped_host_does_in_context_regression(name):
    """Offline, from the package file: tabpfn fits the host's architecture, and on diabetes
    (seed-0 70/30 split) the shipped host is far better than the mean predictor and within 10% of
    ridge (the bar's per-dataset ratios are in results/host_quality.csv)."""
    from sklearn.linear_model import RidgeCV

    X_tr, X_te, y_tr, y_te = diabetes_split()
    regressor = make_regressor(get_path(name), n_estimators=4, random_state=0).fit(X_tr, y_tr)
    assert type(regressor.models_[0]).__module__ == ARCHITECTURES[_pretrain_config(name)["arch_name"]].module
    host = rmse(y_te, regressor.predict(X_te))
    assert host < 0.9 * rmse(y_te, np.full_like(y_te, y_tr.mean()))
    assert host < 1.1 * rmse(y_te, RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_tr, y_tr).predict(X_te))


def test_unknown_host_lists_available():
    with pytest.raises(RetrofitError, match=r"shipped hosts: .*tiny_v3"):
        get_path("tiny_v9")


def test_the_shipped_host_files_are_found_without_importing_torch_tabpfn_or_the_adapters():
    code = (
        "import sys; from retrofit.hosts import get_path, available; "
        "assert all(get_path(name).is_file() for name in available()); "
        "print(sorted(m for m in ('torch', 'tabpfn', 'retrofit.adapters') if m in sys.modules))"
    )
    out = run_python("-c", code)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
