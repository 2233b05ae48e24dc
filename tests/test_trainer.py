"""`retrofit.pretrain.trainer.Pretrainer`: a short run's held-out loss falls, a resumed run continues
the same stream with its borders, the export is a host tabpfn loads (tiny hosts)."""

import numpy as np
import pytest
import torch
from safetensors import safe_open
from synthetic import CURRICULUM, fit_synthetic, pretrain_config, regression_data
from tabpfn import TabPFNRegressor

from retrofit.errors import RetrofitError
from retrofit.hosts.random_host import TINY_ARCHS
from retrofit.pretrain.borders import quantile_borders
from retrofit.pretrain.held_out import evaluate_host
from retrofit.pretrain.trainer import Pretrainer


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3_5"])
def test_short_run_lowers_the_held_out_loss(tmp_path, arch_name):
    trainer = Pretrainer(pretrain_config(tmp_path, arch_name, curriculum=CURRICULUM[:1], warmup_steps=5))
    vset = trainer.val_sets[0]
    before = evaluate_host(trainer.model, trainer.criterion, vset)["small_nll"]
    for _ in range(200):
        trainer.train_step()
    with trainer.averaged_weights():
        after = evaluate_host(trainer.model, trainer.criterion, vset)["small_nll"]
    assert after < before - 0.1, (before, after)


def test_resume_keeps_its_borders_unless_told_to_reborder(tmp_path):
    original = Pretrainer(pretrain_config(tmp_path, max_steps=2, border_tail_share=0.0))
    original.run()
    kept = Pretrainer(pretrain_config(tmp_path, max_steps=2, border_tail_share=0.2))
    assert torch.equal(kept.borders, original.borders) and kept.reborder_steps == []
    adopted = Pretrainer(pretrain_config(tmp_path, max_steps=2, border_tail_share=0.2, reborder=True))
    expected = quantile_borders(len(original.borders) - 1, seed=777, n_values=5000, tail_share=0.2)
    assert torch.equal(adopted.borders, expected) and not torch.equal(expected, original.borders)
    assert adopted.reborder_steps == [2]
    torch.testing.assert_close(adopted.criterion.borders, adopted.borders, rtol=0, atol=0)
    assert adopted.host_card()["reborder_steps"] == [2]


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3_5"])
def test_resume_continues_the_same_stream(tmp_path, arch_name):
    # 6 steps straight vs 3 steps, save, reload, 3 more: identical weights.
    straight = Pretrainer(pretrain_config(tmp_path / "a", arch_name, max_steps=6))
    straight.run()
    first = Pretrainer(pretrain_config(tmp_path / "b", arch_name, max_steps=3))
    first.run()
    resumed = Pretrainer(pretrain_config(tmp_path / "b", arch_name, max_steps=6))
    assert resumed.step == 3
    resumed.run()
    for key, value in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[key], value, rtol=0, atol=0, msg=key)
    assert [r["step"] for r in resumed.history] == [0, 3, 6]


def test_export_is_a_loadable_host_with_its_card(tmp_path):
    trainer = Pretrainer(
        pretrain_config(tmp_path, max_steps=2, export_path=str(tmp_path / "out" / "host-v2.safetensors"))
    )
    path = trainer.run()
    assert (tmp_path / "out" / "host-v2.safetensors").is_file()
    regressor, X_test = fit_synthetic(path, n=60, n_train=40, f=3)
    pred = regressor.predict(X_test)
    assert np.isfinite(pred).all()


def test_v3_5_export_is_tabpfns_v3_5_format_with_the_trained_borders(tmp_path):
    """A v3.5 run exports one `.safetensors` whose borders are the multitask heads' buffer (no
    criterion state, as in tabpfn's own v3.5 files), and tabpfn predicts with exactly those borders."""
    trainer = Pretrainer(pretrain_config(tmp_path, "tabpfn_v3_5", max_steps=2, border_tail_share=0.2))
    path = trainer.run()
    with safe_open(str(path), framework="pt") as fh:
        assert fh.metadata()["architecture_name"] == '"tabpfn_v3_5"'
        tensor_names = fh.keys()  # safe_open is not iterable
        assert not [k for k in tensor_names if k.startswith("criterion.")]
        torch.testing.assert_close(fh.get_tensor("heads.regression_borders"), trainer.borders, rtol=0, atol=0)
    X, y = regression_data(0, 60, 3)
    reg = TabPFNRegressor(model_path=str(path), n_estimators=1, device="cpu", inference_precision=torch.float32)
    pred = reg.fit(X[:40], y[:40]).predict(X[40:])
    assert np.isfinite(pred).all()
    torch.testing.assert_close(reg.models_[0].regression_borders, trainer.borders, rtol=0, atol=0)


def test_resume_into_another_architecture_is_refused(tmp_path):
    Pretrainer(pretrain_config(tmp_path, max_steps=1)).run()
    cfg = pretrain_config(tmp_path, arch_name="tabpfn_v3", arch=dict(TINY_ARCHS["tabpfn_v3"]))
    with pytest.raises(ValueError, match="holds a tabpfn_v2 run"):
        Pretrainer(cfg)


def test_cuda_without_cuda_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RetrofitError, match="sees no CUDA device; use device='cpu'"):
        Pretrainer(pretrain_config(tmp_path, device="cuda"))
    assert not (tmp_path / "run" / "state.pt").exists()


@pytest.mark.cuda
@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3"])
def test_a_cuda_run_follows_the_cpu_run_and_resumes_on_the_cpu(tmp_path, arch_name):
    """The same prior stream on either device (it is drawn on the CPU): 20 steps on CUDA end at
    the weights 20 CPU steps reach, up to float32 reordering; its state resumes on the CPU and its
    export is a CPU checkpoint."""
    on_cpu = Pretrainer(pretrain_config(tmp_path / "cpu", arch_name, max_steps=20))
    on_cpu.run()
    on_cuda = Pretrainer(pretrain_config(tmp_path / "cuda", arch_name, max_steps=20, device="cuda"))
    exported = on_cuda.run()
    for key, value in on_cpu.model.state_dict().items():
        torch.testing.assert_close(on_cuda.model.state_dict()[key].cpu(), value, rtol=1e-3, atol=1e-4, msg=key)
    resumed = Pretrainer(pretrain_config(tmp_path / "cuda", arch_name, max_steps=21))
    assert resumed.step == 20 and next(resumed.model.parameters()).device.type == "cpu"
    resumed.run()
    regressor, X_test = fit_synthetic(exported, n=60, n_train=40, f=3)
    assert np.isfinite(regressor.predict(X_test)).all()
