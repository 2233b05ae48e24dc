"""Hosts written as tabpfn publishes each version load through validation and tabpfn alike."""

import numpy as np
import pytest
import torch
from safetensors import safe_open
from synthetic import fit_synthetic

from retrofit.hosts import check_checkpoint
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
