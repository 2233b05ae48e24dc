"""`retrofit.hosts.card.render_card`: a pretrained checkpoint's model card (a tiny run)."""

import pandas as pd
from synthetic import pretrain_config

from retrofit.hosts.card import render_card
from retrofit.pretrain.trainer import Pretrainer


def test_model_card_renders_the_checkpoint_record(tmp_path):
    notes = ["borders re-drawn at step 2 (test)"]
    path = Pretrainer(
        pretrain_config(tmp_path, max_steps=3, notes=notes, export_path=str(tmp_path / "h.safetensors"))
    ).run()
    quality = pd.DataFrame({"dataset": ["a"], "rmse / ridge": [1.01]})
    card = render_card("test_v2", path, quality, tmp_path / "cards").read_text()
    assert "3 steps" in card and "## Training notes" in card and notes[0] in card
    assert "re-drawn at steps never" in card and "| a " in card
    assert (tmp_path / "cards" / "test_v2_curve.png").stat().st_size > 1000
    assert "suite" not in card


def test_model_card_shows_the_suite_rows_it_is_given(tmp_path):
    path = Pretrainer(pretrain_config(tmp_path, max_steps=1, export_path=str(tmp_path / "h.safetensors"))).run()
    suite = pd.DataFrame({"half": ["development", "held_out"], "over_random_forest": [1.0312, 0.9871]})
    card = render_card("test_v2", path, None, tmp_path / "cards", suite).read_text()
    assert "## On the suite's real tables" in card and "| held_out" in card and "0.987" in card
