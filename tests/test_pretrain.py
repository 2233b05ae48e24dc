"""Pretraining: a short run's loss falls, state resumes exactly, the export loads in tabpfn."""

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors import safe_open
from synthetic import fit_synthetic, regression_data
from tabpfn import TabPFNRegressor

from retrofit.errors import RetrofitError
from retrofit.hosts.card import render_card
from retrofit.hosts.random_host import TINY_ARCHS
from retrofit.pretrain.borders import quantile_borders
from retrofit.pretrain.curriculum import draw_shape, parse_curriculum
from retrofit.pretrain.held_out import evaluate_host
from retrofit.pretrain.pretrain_config import PretrainConfig
from retrofit.pretrain.trainer import Pretrainer

CURRICULUM = [
    {"from_step": 0, "buckets": [{"rows": [40, 60], "features": [1, 3], "batch_size": 16}]},
    {"from_step": 3, "buckets": [{"rows": [60, 80], "features": [2, 4], "batch_size": 8}]},
]


def _config(tmp_path, arch_name: str = "tabpfn_v2", **kw) -> PretrainConfig:
    defaults = dict(
        host_name="test_host",
        arch_name=arch_name,
        arch=dict(TINY_ARCHS[arch_name]),
        run_dir=str(tmp_path / "run"),
        curriculum=CURRICULUM,
        border_samples=5000,
        eval_every_s=1e9,
        checkpoint_every_s=1e9,
        val={"small": {"seed": 1, "n_batches": 2, "batch_size": 16, "rows": [40, 60], "features": [1, 3]}},
    )
    defaults.update(kw)
    return PretrainConfig(**defaults)


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3_5"])
def test_short_run_lowers_the_held_out_loss(tmp_path, arch_name):
    trainer = Pretrainer(_config(tmp_path, arch_name, curriculum=CURRICULUM[:1], warmup_steps=5))
    vset = trainer.val_sets[0]
    before = evaluate_host(trainer.model, trainer.criterion, vset)["small_nll"]
    for _ in range(200):
        trainer.train_step()
    with trainer.averaged_weights():
        after = evaluate_host(trainer.model, trainer.criterion, vset)["small_nll"]
    assert after < before - 0.1, (before, after)


def test_tail_share_gives_the_tails_their_own_buckets():
    """Pure quantile borders leave the tail one bucket more than 4 sd wide (a host trained on them
    extrapolates in one jump to the last border); a 20% uniform share keeps every bucket under 1 sd
    wide and the borders at ±8."""
    plain = quantile_borders(100, seed=0, n_values=20_000)
    mixed = quantile_borders(100, seed=0, n_values=20_000, tail_share=0.2)
    assert plain.diff().max() > 4.0 and mixed.diff().max() < 1.0
    assert (mixed[0], mixed[-1]) == (-8.0, 8.0) and bool((mixed.diff() > 0).all())
    with pytest.raises(ValueError, match="tail_share"):
        quantile_borders(100, seed=0, n_values=1000, tail_share=1.0)


def test_resume_keeps_its_borders_unless_told_to_reborder(tmp_path):
    original = Pretrainer(_config(tmp_path, max_steps=2, border_tail_share=0.0))
    original.run()
    kept = Pretrainer(_config(tmp_path, max_steps=2, border_tail_share=0.2))
    assert torch.equal(kept.borders, original.borders) and kept.reborder_steps == []
    adopted = Pretrainer(_config(tmp_path, max_steps=2, border_tail_share=0.2, reborder=True))
    expected = quantile_borders(len(original.borders) - 1, seed=777, n_values=5000, tail_share=0.2)
    assert torch.equal(adopted.borders, expected) and not torch.equal(expected, original.borders)
    assert adopted.reborder_steps == [2]
    torch.testing.assert_close(adopted.criterion.borders, adopted.borders, rtol=0, atol=0)
    assert adopted.host_card()["reborder_steps"] == [2]


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3_5"])
def test_resume_continues_the_same_stream(tmp_path, arch_name):
    # 6 steps straight vs 3 steps, save, reload, 3 more: identical weights.
    straight = Pretrainer(_config(tmp_path / "a", arch_name, max_steps=6))
    straight.run()
    first = Pretrainer(_config(tmp_path / "b", arch_name, max_steps=3))
    first.run()
    resumed = Pretrainer(_config(tmp_path / "b", arch_name, max_steps=6))
    assert resumed.step == 3
    resumed.run()
    for key, value in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[key], value, rtol=0, atol=0, msg=key)
    assert [r["step"] for r in resumed.history] == [0, 3, 6]


def test_export_is_a_loadable_host_with_its_card(tmp_path):
    trainer = Pretrainer(_config(tmp_path, max_steps=2, export_path=str(tmp_path / "out" / "host-v2.safetensors")))
    path = trainer.run()
    assert (tmp_path / "out" / "host-v2.safetensors").is_file()
    regressor, X_test = fit_synthetic(path, n=60, n_train=40, f=3)
    pred = regressor.predict(X_test)
    assert np.isfinite(pred).all()


def test_v3_5_export_is_tabpfns_v3_5_format_with_the_trained_borders(tmp_path):
    """A v3.5 run exports one `.safetensors` whose borders are the multitask heads' buffer (no
    criterion state, as in tabpfn's own v3.5 files), and tabpfn predicts with exactly those borders."""
    trainer = Pretrainer(_config(tmp_path, "tabpfn_v3_5", max_steps=2, border_tail_share=0.2))
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
    Pretrainer(_config(tmp_path, max_steps=1)).run()
    cfg = _config(tmp_path, arch_name="tabpfn_v3", arch=dict(TINY_ARCHS["tabpfn_v3"]))
    with pytest.raises(ValueError, match="holds a tabpfn_v2 run"):
        Pretrainer(cfg)


def test_curriculum_switches_stage_and_rejects_bad_stages():
    stages = parse_curriculum(CURRICULUM)
    g = torch.Generator().manual_seed(0)
    assert draw_shape(stages, 0, g)[1] == 16 and draw_shape(stages, 3, g)[1] == 8
    with pytest.raises(ValueError, match="start at step 0"):
        parse_curriculum([{"from_step": 5, "buckets": CURRICULUM[0]["buckets"]}])
    bucket = CURRICULUM[0]["buckets"][0]
    keys = r"keys: \['rows', 'features', 'batch_size', 'weight'\]"
    refusals = {
        "batch_sise": (bucket | {"batch_sise": 4}, rf"curriculum stage 0: bad key 'batch_sise'.*{keys}"),
        "rows": (bucket | {"rows": [60, 40]}, r"rows must be \[low, high\] with 1 <= low <= high, got \[60, 40\]"),
        "batch_size": (bucket | {"batch_size": "many"}, r"curriculum stage 0: bad key '.*batch_size'"),
    }
    for broken, message in refusals.values():
        with pytest.raises(RetrofitError, match=message):
            parse_curriculum([{"from_step": 0, "buckets": [broken]}])


def test_model_card_renders_the_checkpoint_record(tmp_path):
    notes = ["borders re-drawn at step 2 (test)"]
    path = Pretrainer(_config(tmp_path, max_steps=3, notes=notes, export_path=str(tmp_path / "h.safetensors"))).run()
    quality = pd.DataFrame({"dataset": ["a"], "rmse / ridge": [1.01]})
    card = render_card("test_v2", path, quality, tmp_path / "cards").read_text()
    assert "3 steps" in card and "## Training notes" in card and notes[0] in card
    assert "re-drawn at steps never" in card and "| a " in card
    assert (tmp_path / "cards" / "test_v2_curve.png").stat().st_size > 1000


@pytest.mark.parametrize("host", ["tiny_v3", "tiny_v2", "tiny_v3_5"])
def test_shipped_pretrain_configs_are_typed_and_a_typo_is_an_error(host, hydra_compose):
    node = hydra_compose("pretrain_host", [f"pretrain={host}"]).pretrain
    config = PretrainConfig.from_config(node)
    assert (config.host_name, config.border_tail_share) == (host, 0.2)
    with pytest.raises(RetrofitError, match="max_minuts"):
        PretrainConfig.from_config({**node, "max_minuts": 5})
    with pytest.raises(RetrofitError, match="max_minutes"):
        PretrainConfig.from_config({**node, "max_minutes": "soon"})
