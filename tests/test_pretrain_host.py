"""`experiments/pretrain_host.py` end to end: two steps of a tiny host, exported as a checkpoint that loads."""

import pytest
from processes import run_experiment

from retrofit.hosts import check_checkpoint


@pytest.mark.slow
def test_pretrain_host_writes_a_checkpoint_that_loads(tmp_path):
    settings = ["pretrain=tiny_v2", "pretrain.export_path=null", "pretrain.max_steps=2", "pretrain.border_samples=2000"]
    settings += ["pretrain.val.small.n_batches=1", "pretrain.val.large.n_batches=1"]
    settings += ["pretrain.arch.emsize=32", "pretrain.arch.nlayers=1"]
    run_experiment("pretrain_host.py", *settings, f"pretrain.run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert check_checkpoint(tmp_path / "run" / "host.safetensors").is_file()
