"""The unit key (`retrofit.unit_key`): what a unit is called, in the store and in every results row."""

from retrofit.unit_key import UnitKey, hparams_text


def test_unit_key_names_what_ran():
    key = UnitKey("tiny_v3", "wage", 2, "oa_only", hparams_text({"tau": {"mode": "calibrated", "c": 0.01}}))
    assert key.label() == "host=tiny_v3/dataset=wage/seed=2/variant=oa_only/hparams=tau.c=0.01,tau.mode=calibrated"
    assert UnitKey("tiny_v3", "wage", 2, "baseline").label() == "host=tiny_v3/dataset=wage/seed=2/variant=baseline"


def test_hparams_are_flattened_and_sorted():
    assert hparams_text({"tau": {"mode": "calibrated", "c": 0.01}, "eps_mode": "relative"}) == (
        "eps_mode=relative,tau.c=0.01,tau.mode=calibrated"
    )
    assert hparams_text(None) == "" and hparams_text("a=1") == "a=1"
