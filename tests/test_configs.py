"""Configs through Hydra's compose API, and the entry points end to end on tiny random hosts."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import open_dict

from retrofit.data import DatasetSpec
from retrofit.runner.config import case_from_hydra
from retrofit.errors import RunnerError
from retrofit.runner.hydra_callbacks import sweep_jobs
from retrofit.runner.tau_sweep import tau_cases

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
DATASETS = ["auto", "carseats", "college", "diabetes", "hitters", "wage"]
SELECTION_DATASETS = ["bdims", "boston", "cps1985", "cpus", "credit", "housing"]


@pytest.fixture
def hydra_compose():
    """`compose(config_name, overrides)` on the repo's configs (hydra node kept); clears Hydra after."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        yield lambda name="config", overrides=(): compose(name, list(overrides), return_hydra_config=True)
    GlobalHydra.instance().clear()


def test_every_dataset_config_is_a_valid_spec():
    names = sorted(p.stem for p in (CONFIGS / "dataset").glob("*.yaml"))
    assert names == sorted(DATASETS + SELECTION_DATASETS)
    for name in names:
        assert DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{name}.yaml").read_text())).name == name


def test_presets_are_selected_on_datasets_disjoint_from_the_quality_bar(hydra_compose):
    bar = hydra_compose("host_quality")
    selection = hydra_compose("preset_selection")
    assert sorted(bar.datasets) == DATASETS and sorted(selection.datasets) == SELECTION_DATASETS
    assert selection.cards_dir is None and selection.results_dir != bar.results_dir
    assert "stored" not in selection.presets and len(selection.presets) >= 2


def test_default_case_runs_every_variant_on_tiny_v3(hydra_compose, tmp_path):
    cfg = hydra_compose(overrides=[f"results_dir={tmp_path}"])
    case = case_from_hydra(cfg, cfg.hydra)
    assert (case.host, case.dataset.name, case.seed) == ("tiny_v3", "diabetes", 0)
    assert [u.variant for u in case.units] == ["baseline", "full_o", "oa_only"]
    assert case.runs_dir == tmp_path / "runs"


def test_variant_override_restricts_to_baseline_plus_it(hydra_compose):
    cfg = hydra_compose(overrides=["variant=oa_only", "dataset=wage", "seed=2"])
    case = case_from_hydra(cfg, cfg.hydra)
    assert [u.variant for u in case.units] == ["baseline", "oa_only"]
    assert (case.dataset.name, case.seed) == ("wage", 2)


def test_relative_results_dir_is_taken_from_the_start_directory(hydra_compose, tmp_path):
    cfg = hydra_compose(overrides=["results_dir=out/here"])
    with open_dict(cfg):
        cfg.hydra.runtime.cwd = str(tmp_path)
    assert case_from_hydra(cfg, cfg.hydra).results_dir == tmp_path / "out" / "here"


def test_paper_table_is_18_distinct_cases(hydra_compose):
    cfg = hydra_compose(overrides=["+experiment=paper_table"])
    with open_dict(cfg):
        cfg.hydra.overrides.task = ["+experiment=paper_table"]
    jobs = sweep_jobs(cfg)
    assert len(jobs) == 18 and len({tuple(j) for j in jobs}) == 18
    datasets = {o for job in jobs for o in job if o.startswith("dataset=")}
    assert datasets == {f"dataset={d}" for d in ["diabetes", "auto", "carseats", "hitters", "wage", "college"]}


def test_checkpoint_host_needs_an_existing_tabpfn_file(hydra_compose, tmp_path):
    cfg = hydra_compose(overrides=["host=checkpoint"])
    with pytest.raises(RunnerError, match="host=checkpoint needs host.path"):
        case_from_hydra(cfg, cfg.hydra)
    cfg = hydra_compose(overrides=["host=checkpoint", f"host.path={tmp_path / 'none.ckpt'}"])
    with pytest.raises(ValueError, match="does not exist"):
        case_from_hydra(cfg, cfg.hydra)
    (tmp_path / "notes.safetensors").write_text("not a checkpoint")
    cfg = hydra_compose(overrides=["host=checkpoint", f"host.path={tmp_path / 'notes.safetensors'}"])
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        case_from_hydra(cfg, cfg.hydra)


def test_tau_sweep_config_fits_each_case_once(hydra_compose, tmp_path):
    cfg = hydra_compose("tau_sweep")
    cases = tau_cases(cfg, tmp_path)
    assert len(cases) == 6
    assert len(cases[0].units) == len(cfg.variants) * len(cfg.c_values) == 10
    assert cases[0].results_dir == tmp_path / "results" / "tau_sweep"


# --- the entry points as a user runs them (subprocesses) --------------------------------------


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


def host_args(host: Path) -> list[str]:
    return ["host=checkpoint", f"host.path={host}", "host.name=random_v3", "n_estimators=1"]


@pytest.mark.slow
def test_one_case_from_the_command_line(host, tmp_path):
    out = run("experiments/sweep.py", "dataset=hitters", "seed=1", f"results_dir={tmp_path}", *host_args(host))
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(csv["variant"]) == ["baseline", "full_o", "oa_only"]
    assert set(csv["n_train"] + csv["n_test"]) == {263}
    assert "dropped 59 of 322 rows without target 'Salary'" in out.stdout + out.stderr


@pytest.mark.slow
def test_joblib_sweep_with_a_csv_dataset_added_by_one_yaml(host, tmp_path):
    """The README's add-a-dataset example: one YAML (on a search path) and a CSV relative to cwd."""
    pd.DataFrame({"a": range(40), "b": [i % 7 for i in range(40)], "y": [i * 0.5 + i % 3 for i in range(40)]}).to_csv(
        tmp_path / "toy.csv", index=False
    )
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "toy.yaml").write_text("name: toy\nsource: csv\npath: toy.csv\ntarget: y\n")
    out = run(
        str(ROOT / "experiments" / "sweep.py"), "-m", "dataset=toy,diabetes", "seed=0,1", "variant=oa_only",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={tmp_path / 'multirun'}", "results_dir=results", *host_args(host), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    out = run(str(ROOT / "experiments" / "aggregate.py"), "results_dir=results", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "results" / "retrofit_rmse.csv")
    assert len(csv) == 8 and set(csv["dataset"]) == {"toy", "diabetes"}
    assert (tmp_path / "results" / "retrofit_table.md").is_file()


BAD_INPUTS = {
    "unknown-dataset": (["dataset=nope"], "Could not find 'dataset/nope'"),
    "unknown-variant": (["variant=nope"], "Could not find 'variant/nope'"),
    "unknown-host": (["host=nope"], "Could not find 'host/nope'"),
    "checkpoint-without-path": (["host=checkpoint"], "host=checkpoint needs host.path"),
    "checkpoint-missing": (["host=checkpoint", "host.path=missing.ckpt"], "does not exist"),
    "not-a-checkpoint": (["host=checkpoint", "host.path=README.md"], "README.md could not be read as a torch checkpoint"),
    "missing-csv": (["dataset.source=csv", "~dataset.loader", "+dataset.path=missing.csv"], "missing.csv does not exist"),
    "missing-target": (["dataset.target=nope"], "no target column 'nope'"),
    "unknown-hparam": (["+hparams.temperature=2"], "unknown retrofit hyper-parameters"),
    "duplicate-jobs": (["-m", "seed=0,0"], "duplicate units in this sweep"),
    "bad-table-later-in-sweep": (["-m", "dataset=hitters,diabetes", "dataset.target=Salary"], "no target column 'Salary'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_nonzero_with_a_clear_message_and_no_rows(name, tmp_path):
    overrides, message = BAD_INPUTS[name]
    out = run("experiments/sweep.py", *overrides, f"results_dir={tmp_path}", f"hydra.sweep.dir={tmp_path / 'm'}")
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "retrofit_rmse.csv").exists()


@pytest.mark.slow
def test_tau_sweep_writes_one_row_per_variant_and_c(hydra_compose, host, tmp_path):
    from retrofit.runner.case import run_case
    from retrofit.runner.tau_sweep import write_tau_results

    overrides = ["seeds=[0,1]", "c_values=[0.001,0.1]", f"results_dir={tmp_path}", *host_args(host)]
    overrides += [f"~datasets.{name}" for name in DATASETS if name != "diabetes"]
    cfg = hydra_compose("tau_sweep", overrides)
    for case in tau_cases(cfg, tmp_path):
        run_case(case)
    table = write_tau_results(tmp_path)
    assert sorted(zip(table["variant"], table["c"])) == [("full_o", 0.001), ("full_o", 0.1), ("oa_only", 0.001), ("oa_only", 0.1)]
    assert set(table["cases"]) == {2}
    assert pd.read_csv(tmp_path / "tau_sweep.csv").shape[0] == 4 and (tmp_path / "tau_sweep.png").is_file()
