"""The sweep's schemas and where a run may write (`retrofit.runner`): a value of the wrong type refused
when the config is composed, the committed record a sweep's results_dir only from its make target."""

import os
import re
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import open_dict
from processes import record_state

from retrofit.errors import RunnerError
from retrofit.record_guard import RECORD_DIR, RECORD_ENV
from retrofit.runner import results_dir_of

ROOT = Path(__file__).resolve().parents[1]


MISTYPED_SETTINGS = {
    "seed-float": (["seed=1.5"], "Value '1.5' of type 'float' could not be converted to Integer"),
    "seed-text": (["seed=abc"], "Value 'abc' of type 'str' could not be converted to Integer"),
    "seed-bool": (["seed=true"], "Value 'True' of type 'bool' could not be converted to Integer"),
    "n_estimators-float": (["n_estimators=2.5"], "Value '2.5' of type 'float' could not be converted to Integer"),
    "test_size-text": (["test_size=abc"], "Value 'abc' of type 'str' could not be converted to Float"),
    "threads-bool": (["threads=true"], "Value 'True' of type 'bool' could not be converted to Integer"),
    "overwrite-text": (["overwrite=maybe"], "Value 'maybe' is not a valid bool"),
    "hparams-scalar": (["hparams=5"], r"Cannot assign int to Dict"),
    "log_level-unknown": (["log_level=LOUD"], r"Invalid value 'LOUD', expected one of \[DEBUG, INFO, WARNING, ERROR"),
}
"""A value of the wrong type: refused when the config is composed (the sweep's schema), naming the
override and why."""


@pytest.mark.parametrize("name", sorted(MISTYPED_SETTINGS))
def test_mistyped_settings_are_refused_when_composed_naming_the_override(hydra_compose, name):
    overrides, message = MISTYPED_SETTINGS[name]
    with pytest.raises(ConfigCompositionException) as refused:
        hydra_compose(overrides=overrides)
    said = f"{refused.value} {refused.value.__cause__}"
    assert f"Error merging override {overrides[0]}" in said and re.search(message, said), said


def test_seeds_of_the_tau_sweep_are_integers_too(hydra_compose):
    with pytest.raises(ConfigCompositionException) as refused:
        hydra_compose("tau_sweep", ["seeds=[1.5]"])
    assert "could not be converted to Integer" in str(refused.value.__cause__)
    assert "seeds[0]" in str(refused.value.__cause__)


def test_only_a_whole_checked_record_sweep_under_the_record_variable_may_write_the_record(
    hydra_compose, tmp_path, monkeypatch
):
    """The record (`results/`, however named: `..`, a symlink) is a sweep's `results_dir` only with
    RETROFIT_RECORD=1, in a whole sweep (-m), checked against a reference; nothing is written."""
    (tmp_path / "link").symlink_to(RECORD_DIR, target_is_directory=True)
    routes = ["results", "outputs/../results", str(tmp_path / "link")]

    def results_dir(value: str, *, multirun: bool, reference: bool) -> Path:
        extra = ["reference=results/retrofit_rmse.csv"] if reference else []
        cfg = hydra_compose(overrides=[f"results_dir={value}", *extra])
        with open_dict(cfg):
            cfg.hydra.runtime.cwd = str(ROOT)
            cfg.hydra.mode = RunMode.MULTIRUN if multirun else RunMode.RUN
        return results_dir_of(cfg, cfg.hydra)

    before = record_state()
    monkeypatch.delenv(RECORD_ENV, raising=False)
    for value in routes:
        with pytest.raises(RunnerError, match=r"is in the committed record .*the sweep's results_dir=outputs/results"):
            results_dir(value, multirun=True, reference=True)
    monkeypatch.setenv(RECORD_ENV, "1")
    with pytest.raises(RunnerError, match=r"only by a whole sweep \(-m\): run make retrofit"):
        results_dir("results", multirun=False, reference=True)
    with pytest.raises(RunnerError, match=r"only when checked: pass reference"):
        results_dir("results", multirun=True, reference=False)
    for value in routes:
        assert os.path.realpath(results_dir(value, multirun=True, reference=True)) == str(RECORD_DIR)
    assert results_dir(str(tmp_path / "mine"), multirun=False, reference=False) == tmp_path / "mine"
    assert record_state() == before
