"""`retrofit.hosts.checkpoint`: hosts written as tabpfn publishes each version load through validation and
tabpfn alike; the inference presets without tabpfn's fingerprint column."""

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors import safe_open
from synthetic import fit_synthetic

from retrofit.hosts import check_checkpoint, inference_config
from retrofit.hosts.checkpoint import PUBLISHED_FORMATS
from retrofit.hosts.random_host import TINY_ARCHS, default_size_host


@pytest.mark.parametrize("arch_name", sorted(PUBLISHED_FORMATS))
def test_published_layout_validates_and_predicts_with_its_borders(tmp_path, arch_name):
    overrides = {k: v for k, v in TINY_ARCHS[arch_name].items() if k != "max_num_classes"}
    path = default_size_host(arch_name, tmp_path, seed=0, overrides=overrides)
    layout = PUBLISHED_FORMATS[arch_name]
    assert path.name == layout.file_name and check_checkpoint(path) == path
    reg, X_test = fit_synthetic(path, n=90, n_train=70)
    assert np.isfinite(reg.predict(X_test)).all()
    # The borders tabpfn predicts with are the ones written (not an architecture default).
    torch.testing.assert_close(reg.znorm_space_bardist_.borders, torch.linspace(-4.0, 4.0, 33), rtol=0, atol=0)
    if path.suffix == ".safetensors":
        with safe_open(str(path), framework="pt") as fh:
            assert fh.metadata()["architecture_name"] == f'"{layout.architecture_name}"'
    else:
        checkpoint = torch.load(path, weights_only=True)  # plain containers only, as tabpfn loads it
        assert checkpoint.get("architecture_name") == layout.architecture_name
        assert ("inference_config" in checkpoint) == (layout.inference_version is not None)


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
