"""Every shipped host is stable under last-bit input changes, stock and under every variant it runs.

Another CPU's BLAS kernel changes last bits; a host whose predictions jump with them (tabpfn's
row-hash fingerprint column on a host never pretrained with it) makes a record that reproduces on
one machine only. The property tested: every numeric input times (1 +- 1e-7)
(`benchmarks.floor_movements.perturb_inputs`, both phases) moves the test RMSE by at most 1e-6
relative, on real data, for every shipped host and variant.
"""

from pathlib import Path

import numpy as np
import pytest
import yaml

import retrofit
from benchmarks.floor_movements import perturb_inputs
from retrofit.adapters import architecture_of
from retrofit.fitting import fit_host, load_split
from retrofit.hosts import available, get_path, inference_config
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


def test_no_preset_selection_candidate_carries_the_fingerprint():
    """Preset selection cannot pick an unstable preset: none of its candidates has the fingerprint."""
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "preset_selection.yaml").read_text())
    assert config["presets"]
    assert not [p for p in config["presets"] if inference_config(p)["FINGERPRINT_FEATURE"]]


@pytest.mark.parametrize("version", ["v2", "v2_5"])
def test_a_no_fingerprint_preset_is_tabpfns_default_but_the_fingerprint(version):
    default, plain = inference_config(f"{version}_default"), inference_config(f"{version}_no_fingerprint")
    assert (default["FINGERPRINT_FEATURE"], plain["FINGERPRINT_FEATURE"]) == (True, False)
    assert {k: v for k, v in default.items() if k != "FINGERPRINT_FEATURE"} == {
        k: v for k, v in plain.items() if k != "FINGERPRINT_FEATURE"
    }
