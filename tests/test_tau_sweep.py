"""The τ sweep (`experiments/tau_sweep.py`): its cases from the config (one fit per case, empty
lists refused), its table and plot from the units of its own cases, and the entry point end to end."""

import pandas as pd
import pytest
from processes import run_experiment

from experiments.tau_sweep import tau_cases, write_tau_results
from retrofit.errors import RunnerError
from retrofit.runner.case import run_case


@pytest.mark.parametrize("key", ["c_values", "variants"])
def test_an_empty_tau_sweep_list_is_refused_naming_it(hydra_compose, key):
    cfg = hydra_compose("tau_sweep", [f"{key}=[]"])
    with pytest.raises(RunnerError, match=rf"{key}=\[\] leaves the tau sweep nothing to run"):
        tau_cases(cfg, cfg.hydra)


def test_tau_sweep_config_fits_each_case_once(hydra_compose, tmp_path):
    cfg = hydra_compose("tau_sweep", [f"cache_dir={tmp_path}"])
    cases = tau_cases(cfg, cfg.hydra)
    assert [c.dataset.name for c in cases] == list(cfg.datasets)
    assert len(cases[0].units) == len(cfg.variants) * len(cfg.c_values) == 10
    assert cases[0].runs_dir == tmp_path / "tau_sweep" / "runs" and cases[0].timing_rounds == 0


@pytest.mark.slow
def test_tau_sweep_writes_one_row_per_variant_and_c(hydra_compose, host, tmp_path):
    overrides = ["seeds=[0,1]", "c_values=[0.001,0.1]", "datasets=[diabetes]", f"cache_dir={tmp_path}"]
    host_args = ["host=checkpoint", f"host.path={host}", "host.name=random_v3", "n_estimators=1"]
    cfg = hydra_compose("tau_sweep", overrides + host_args)
    cases = tau_cases(cfg, cfg.hydra)
    for case in cases:
        run_case(case)
    table = write_tau_results(tmp_path, cases[:1])  # the units of these cases only
    assert set(table["cases"]) == {1}
    table = write_tau_results(tmp_path, cases)
    assert sorted(zip(table["variant"], table["c"], strict=True)) == [
        ("full_o", 0.001),
        ("full_o", 0.1),
        ("oa_only", 0.001),
        ("oa_only", 0.1),
    ]
    assert set(table["cases"]) == {2}
    assert pd.read_csv(tmp_path / "tau_sweep.csv").shape[0] == 4 and (tmp_path / "tau_sweep.png").is_file()


@pytest.mark.slow
def test_the_entry_point_writes_a_row_per_variant_and_c(tmp_path):
    settings = ["host=tiny_v2", "datasets=[diabetes]", "c_values=[0.001,0.1]", "variants=[oa_only]", "n_estimators=1"]
    run_experiment(
        "tau_sweep.py", *settings, f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}", cwd=tmp_path
    )
    table = pd.read_csv(tmp_path / "tau_sweep.csv")
    assert sorted(table.c) == [0.001, 0.1] and set(table.variant) == {"oa_only"}
