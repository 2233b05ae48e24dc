"""Configs through Hydra's compose API, and the entry points end to end on tiny random hosts."""

import json
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from omegaconf import open_dict
from processes import run_python

from retrofit.data import DatasetError, DatasetSpec
from retrofit.errors import RunnerError, exit_on_any_error
from retrofit.hosts import available
from retrofit.jobs.tau_sweep import tau_cases
from retrofit.runner.case import check_cases
from retrofit.runner.config import BUILTIN_SEARCHPATH, case_from_hydra, sweep_jobs
from retrofit.variants import VARIANT_DIR, available_variants, resolve_variant

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
BUILTIN_VARIANTS = ["baseline", "full_o", "o_closed", "oa_only"]


def case_of(hydra_compose, *overrides: str):
    cfg = hydra_compose("sweep", overrides)
    return case_from_hydra(cfg, cfg.hydra)


@pytest.fixture
def benchmark_datasets(hydra_compose) -> list[str]:
    """The one list of the six default datasets (configs/benchmark/default.yaml)."""
    return hydra_compose("host_quality").benchmark_datasets.split(",")


def test_every_dataset_config_is_a_valid_spec(benchmark_datasets, hydra_compose):
    """Every dataset file (any number: adding one is adding its YAML) is a spec named by its file,
    and every dataset an experiment lists has one."""
    names = sorted(
        p.stem for p in (CONFIGS / "dataset").glob("*.yaml") if p.stem != "csv"
    )  # filled on the command line
    assert set(benchmark_datasets + list(hydra_compose("preset_selection").datasets)) <= set(names)
    for name in names:
        assert DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{name}.yaml").read_text())).name == name


def test_the_default_datasets_are_written_once_and_read_by_all(hydra_compose, benchmark_datasets):
    assert len(benchmark_datasets) == 6
    assert list(hydra_compose("host_quality").datasets) == benchmark_datasets
    assert list(hydra_compose("tau_sweep").datasets) == benchmark_datasets
    sources = [
        p for p in CONFIGS.rglob("*.yaml") if "wage,college" in p.read_text() or "wage, college" in p.read_text()
    ]
    assert sources == [CONFIGS / "benchmark" / "default.yaml"]


def test_presets_are_selected_on_datasets_disjoint_from_the_quality_bar(hydra_compose):
    bar = hydra_compose("host_quality")
    selection = hydra_compose("preset_selection")
    assert not set(bar.datasets) & set(selection.datasets) and len(selection.datasets) == 6
    assert selection.cards_dir is None and selection.results_dir != bar.results_dir
    assert "stored" not in selection.presets and len(selection.presets) >= 2


def test_the_experiments_over_the_shipped_hosts_list_every_one(hydra_compose):
    """Every default host list is the shipped hosts, in `SHIPPED_HOSTS` order, and each has a
    `host=` option (`configs/host/<name>.yaml`) naming it."""
    for name in ("host_quality", "preset_selection", "audit", "sweep_cost"):
        assert list(hydra_compose(name).hosts) == available(), name
    for host in available():
        assert case_of(hydra_compose, f"host={host}").host == host


def test_hydra_settings_live_in_one_group(hydra_compose):
    for name in ("sweep", "tau_sweep", "host_quality", "audit", "pretrain_host", "sink_mass"):
        assert hydra_compose(name).hydra.job.chdir is False
    with_chdir = sorted(str(p.relative_to(CONFIGS)) for p in CONFIGS.rglob("*.yaml") if "chdir" in p.read_text())
    assert with_chdir == ["hydra/default.yaml"]


def test_default_case_runs_every_builtin_variant_on_tiny_v3(hydra_compose, tmp_path):
    case = case_of(hydra_compose, f"cache_dir={tmp_path}")
    assert (case.host, case.dataset.name, case.seed, case.device, case.precision) == (
        "tiny_v3",
        "diabetes",
        0,
        "cpu",
        "float32",
    )
    assert [u.variant for u in case.units] == BUILTIN_VARIANTS
    assert all(u.hparams == {} and u.spec is None for u in case.units)
    assert case.runs_dir == tmp_path / "runs" and (case.timing_rounds, case.timing_members) == (3, 1)
    assert case_of(hydra_compose, "timing.members=8").timing_members == 8


@pytest.mark.parametrize("host", ["tiny_v2"])
def test_closed_variants_are_left_out_on_a_host_that_cannot_be_closed(hydra_compose, host):
    assert [u.variant for u in case_of(hydra_compose, f"host={host}").units] == ["baseline", "full_o", "oa_only"]


def test_variant_override_restricts_to_baseline_plus_it(hydra_compose):
    case = case_of(hydra_compose, "variant=oa_only", "dataset=wage", "seed=2")
    assert [u.variant for u in case.units] == ["baseline", "oa_only"]
    assert (case.dataset.name, case.seed) == ("wage", 2)


def test_a_hyper_parameter_set_twice_is_refused(hydra_compose):
    """`variant.eps_den=` and `+hparams.eps_den=` both set one key: refused, neither silently wins."""
    with pytest.raises(RunnerError, match=r"eps_den is set twice, by variant\.eps_den and by \+hparams\.eps_den"):
        case_of(hydra_compose, "variant=oa_only", "variant.eps_den=0.5", "+hparams.eps_den=1e-3")


@pytest.mark.parametrize("key", ["c_values", "variants"])
def test_an_empty_tau_sweep_list_is_refused_naming_it(hydra_compose, key):
    cfg = hydra_compose("tau_sweep", [f"{key}=[]"])
    with pytest.raises(RunnerError, match=rf"{key}=\[\] leaves the tau sweep nothing to run"):
        tau_cases(cfg, cfg.hydra)


@pytest.mark.parametrize(
    ("overrides", "hparams", "path"),
    [
        (["variant.eps_den=0.5"], {"eps_den": 0.5}, "eps_den=0.5"),
        (["variant.eps_mode=relative"], {"eps_mode": "relative"}, "eps_mode=relative"),
        (
            ["variant.tau.c=0.01"],
            {"tau": {"mode": "calibrated", "c": 0.01}},
            "tau.c=0.01,tau.mode=calibrated",
        ),
        (["variant.tau=0.01"], {"tau": {"mode": "calibrated", "c": 0.01}}, "tau.c=0.01,tau.mode=calibrated"),  # c
        (["+hparams.tau=0.01"], {"tau": {"mode": "calibrated", "c": 0.01}}, "tau.c=0.01,tau.mode=calibrated"),
        (["variant.compact=true"], {"compact": True}, "compact=True"),
        (["variant.eps_den=1e-6"], {}, ""),  # the built-in value: the built-in unit
    ],
)
def test_variant_key_overrides_take_effect_and_name_the_unit(hydra_compose, overrides, hparams, path):
    case = case_of(hydra_compose, "variant=oa_only", *overrides)
    unit = case.units[1]
    assert unit.hparams == hparams and case.key(unit).hparams == path
    resolved = unit.resolved()
    assert resolved.eps_den == hparams.get("eps_den", 1e-6)
    assert resolved.tau.c == hparams.get("tau", {}).get("c", 1e-3)
    assert resolved.eps_mode == hparams.get("eps_mode", "absolute") and resolved.compact == hparams.get(
        "compact", False
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["variant=oa_only", "+variant.colour=1"], r"bad key 'colour'"),
        (["variant=oa_only", "+variant.tau.cc=1"], r"bad key 'tau.cc'"),
        (["variant=oa_only", "variant.eps_den=abc"], r"bad key 'eps_den'"),
        (
            ["variant=oa_only", "variant.adapters=[o_attention,o_ffn]"],
            r"variant.adapters=.* would change what the built-in",
        ),
        (["variant=oa_only", "variant.name=mine"], r"has name 'mine'"),
        (["variant=oa_only", "variant.eps_mode=softmax"], r"eps_mode must be one of"),
        (["+host.nmae=x"], r"bad key 'host.nmae' .*keys: \['name', 'path'\]"),
        (["device=gpu"], r"device must be one of"),
        (["precision=bfloat16"], r"precision='bfloat16': must be one of"),
        (["timing.rounds=-1"], r"timing_rounds=-1: must be an integer in \[0, 1000\], e.g. timing.rounds=3"),
        (["threads=0"], r"threads=0: must be an integer in \[1, 1024\]"),
        (["timing.members=0"], r"timing_members=0: must be an integer in \[1, 10000\], e.g. timing.members=1"),
        (["+timing.repeats=3"], r"bad key 'timing.repeats'"),
    ],
)
def test_bad_keys_and_values_are_errors_naming_them(hydra_compose, overrides, message):
    with pytest.raises(RunnerError, match=message):
        case_of(hydra_compose, *overrides)


def test_a_dataset_key_typo_is_an_error(hydra_compose):
    with pytest.raises(DatasetError, match=r"unknown key 'targte' for source 'sklearn' \(did you mean 'target'\?"):
        case_of(hydra_compose, "+dataset.targte=y")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_without_cuda_fails_before_any_work(hydra_compose):
    with pytest.raises(RunnerError, match=r"device='cuda' but torch .* sees no CUDA device"):
        case_of(hydra_compose, "device=cuda")
    assert case_of(hydra_compose, "device=auto").device == "cpu"


def write_variant(folder: Path, name: str, **keys) -> Path:
    (folder / "variant").mkdir(parents=True, exist_ok=True)
    spec = {
        "name": name,
        "adapters": ["o_attention"],
        "tau": {"mode": "calibrated", "c": 0.01},
        "eps_den": 1e-3,
    } | keys
    (folder / "variant" / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return folder


def test_a_variant_on_a_search_path_runs_from_its_file(hydra_compose, tmp_path):
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{write_variant(tmp_path, 'mine')}]"
    assert [u.variant for u in case_of(hydra_compose, searchpath).units] == [
        "baseline",
        "full_o",
        "mine",
        "o_closed",
        "oa_only",
    ]
    _, mine = case_of(hydra_compose, searchpath, "variant=mine", "variant.eps_den=0.01").units
    assert mine.spec["eps_den"] == 0.01 and mine.resolved().tau.c == 0.01 and mine.resolved().name == "mine"
    with pytest.raises(RunnerError, match=r"keep pkg://retrofit.configs in it"):
        case_of(hydra_compose, f"hydra.searchpath=[file://{tmp_path}]")


def test_the_docs_variant_file_means_the_same_in_the_sweep_and_in_python(hydra_compose, tmp_path):
    """docs/sweep.md's oa_relative.yaml, as written there, runs in the sweep and in `resolve_variant`
    (what `retrofit.retrofit`, `retrofit.compare` and `RetrofitRegressor` take) with the same settings."""
    text = (ROOT / "docs" / "sweep.md").read_text()
    body = text.split("variant/oa_relative.yaml <<'EOF'\n", 1)[1].split("EOF\n", 1)[0]
    (tmp_path / "variant").mkdir()
    path = tmp_path / "variant" / "oa_relative.yaml"
    path.write_text(body)
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path}]"
    _, swept = case_of(hydra_compose, searchpath, "variant=oa_relative").units
    in_python = resolve_variant(path)
    assert swept.resolved().name == "oa_relative" and in_python.name == "oa_relative.yaml"
    assert (swept.resolved().adapters, swept.resolved().eps_mode, swept.resolved().tau) == (
        in_python.adapters,
        in_python.eps_mode,
        in_python.tau,
    )
    assert in_python.eps_mode == "relative"


def test_a_search_path_variant_with_a_bad_key_is_refused(hydra_compose, tmp_path):
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{write_variant(tmp_path, 'bad', temperature=2)}]"
    with pytest.raises(RunnerError, match=r"variant=bad: .*bad key 'temperature'"):
        case_of(hydra_compose, searchpath)


def test_builtin_variants_are_package_data():
    assert available_variants() == BUILTIN_VARIANTS
    assert VARIANT_DIR.is_relative_to(ROOT / "retrofit") and not (CONFIGS / "variant").exists()
    package_data = __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert set(package_data["retrofit.configs"]) == {"variant/*.yaml", "decomposition/*.yaml"}


def test_relative_paths_are_taken_from_the_start_directory(hydra_compose, tmp_path):
    cfg = hydra_compose("sweep", ["cache_dir=out/cache"])
    with open_dict(cfg):
        cfg.hydra.runtime.cwd = str(tmp_path)
    assert case_from_hydra(cfg, cfg.hydra).runs_dir == tmp_path / "out" / "cache" / "runs"


def test_paper_table_is_54_distinct_cases_on_every_shipped_host_timed_on_seed_0(hydra_compose, benchmark_datasets):
    cfg = hydra_compose("sweep", ["+experiment=paper_table"])
    with open_dict(cfg):
        cfg.hydra.overrides.task = ["+experiment=paper_table"]
    jobs = sweep_jobs(cfg)
    assert len(jobs) == 54 and len({tuple(j) for j in jobs}) == 54
    assert {o for job in jobs for o in job if o.startswith("dataset=")} == {f"dataset={d}" for d in benchmark_datasets}
    assert {o for job in jobs for o in job if o.startswith("host=")} == {f"host={h}" for h in available()}
    assert list(cfg.timing.seeds) == [0]
    seeds = [next(o for o in job if o.startswith("seed=")) for job in jobs]
    assert seeds == sorted(seeds)  # the costly seed-0 cases start first, the workers end on cheap ones


def test_sweep_expansion_follows_hydras_override_rules(hydra_compose):
    """Hydra's private API is banned by `make lint` (ruff TID251); the expansion is checked here."""
    cfg = hydra_compose("sweep", [])
    with open_dict(cfg):
        cfg.hydra.overrides.task = ["seed=0,1", "dataset=wage", "seed=2,3,4"]  # a later value of a key wins
    assert sweep_jobs(cfg) == [["seed=2", "dataset=wage"], ["seed=3", "dataset=wage"], ["seed=4", "dataset=wage"]]


def test_checkpoint_host_needs_an_existing_tabpfn_file(hydra_compose, tmp_path):
    with pytest.raises(RunnerError, match=r"host=checkpoint needs host\.path"):
        case_of(hydra_compose, "host=checkpoint")
    with pytest.raises(ValueError, match="does not exist"):
        case_of(hydra_compose, "host=checkpoint", f"host.path={tmp_path / 'none.ckpt'}")
    (tmp_path / "notes.safetensors").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        case_of(hydra_compose, "host=checkpoint", f"host.path={tmp_path / 'notes.safetensors'}")


def test_tau_sweep_config_fits_each_case_once(hydra_compose, tmp_path):
    cfg = hydra_compose("tau_sweep", [f"cache_dir={tmp_path}"])
    cases = tau_cases(cfg, cfg.hydra)
    assert [c.dataset.name for c in cases] == list(cfg.datasets)
    assert len(cases[0].units) == len(cfg.variants) * len(cfg.c_values) == 10
    assert cases[0].runs_dir == tmp_path / "tau_sweep" / "runs" and cases[0].timing_rounds == 0


# --- the entry points as a user runs them (subprocesses) --------------------------------------


run = partial(run_python, HYDRA_FULL_ERROR="0")


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


def host_args(host: Path) -> list[str]:
    return ["host=checkpoint", f"host.path={host}", "host.name=random_v3", "n_estimators=1", "timing.rounds=0"]


def out_args(tmp_path: Path) -> list[str]:
    return [f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'multirun'}"]


@pytest.mark.slow
def test_one_case_from_the_command_line(host, tmp_path):
    out = run("experiments/sweep.py", "dataset=hitters", "seed=1", *out_args(tmp_path), *host_args(host))
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(csv["variant"]) == BUILTIN_VARIANTS and set(csv["device"]) == {"cpu"}
    assert set(csv["n_train"] + csv["n_test"]) == {263}
    assert "dropped 59 of 322 rows without target 'Salary'" in out.stdout + out.stderr
    assert len(list((tmp_path / "cache" / "runs").glob("*.json"))) == len(BUILTIN_VARIANTS)  # one file per unit


def sweep(tmp_path: Path, host: Path, *extra: str, script: str = "sweep.py") -> subprocess.CompletedProcess:
    """A 2 × 2 sweep (a CSV dataset added by one YAML, a variant added by one YAML, both on a search
    path; a CSV path relative to its YAML's folder) in `tmp_path`."""
    (tmp_path / "conf" / "dataset").mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"a": range(40), "b": [i % 7 for i in range(40)], "y": [i * 0.5 + i % 3 for i in range(40)]}).to_csv(
        tmp_path / "conf" / "dataset" / "toy.csv", index=False
    )
    (tmp_path / "conf" / "dataset" / "toy.yaml").write_text("name: toy\nsource: csv\npath: toy.csv\ntarget: y\n")
    write_variant(tmp_path / "conf", "mine")
    return run(
        str(ROOT / "experiments" / script),
        "-m",
        "dataset=toy,diabetes",
        "seed=0,1",
        "variant=mine",
        f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path / 'conf'}]",
        "results_dir=results",
        "cache_dir=cache",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
        *host_args(host),
        *extra,
        cwd=tmp_path,
    )


@pytest.mark.slow
def test_joblib_sweep_writes_its_rows_and_checks_a_reference(host, tmp_path):
    out = sweep(tmp_path, host, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "results" / "retrofit_rmse.csv")
    assert len(csv) == 8 and set(csv["dataset"]) == {"toy", "diabetes"} and set(csv["variant"]) == {"baseline", "mine"}
    assert (tmp_path / "results" / "retrofit_table.md").is_file()
    reference = tmp_path / "reference.csv"
    csv.to_csv(reference, index=False)
    # Rerun with the reference: every unit is read back (nothing recomputed), every row reproduces.
    out = sweep(tmp_path, host, f"reference={reference}")
    assert out.returncode == 0, out.stderr
    assert "reproduced: 8/8 rows within 1e-05 (max rel |Δ| 0, " in out.stdout
    csv.loc[3, "rmse"] *= 1.001  # an altered reference row
    csv.to_csv(reference, index=False)
    runs = (tmp_path / "cache" / "runs").glob("*.json")
    unit = next(p for p in runs if '"variant": "baseline"' in p.read_text())  # another sweep's unit in the cache
    other = unit.parent / "other.json"
    other.write_text(json.dumps({**json.loads(unit.read_text()), "seed": 5}))
    out = sweep(tmp_path, host, f"reference={reference}", script="aggregate.py")  # this sweep's units only
    assert out.returncode == 1 and "reproduced: 7/8 rows within 1e-05 (max rel |Δ| 0.000999 in rmse" in out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "results" / "reproduction.txt").read_text().startswith("reproduced: 7/8")


@pytest.mark.slow
def test_submitit_local_sweep_runs_end_to_end(host, tmp_path):
    out = sweep(tmp_path, host, "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=20")
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "results" / "retrofit_rmse.csv")
    assert len(csv) == 8 and (csv["variant"] == "baseline").sum() == 4
    assert list((tmp_path / "multirun" / ".submitit").iterdir())  # the jobs went through submitit


def test_the_slurm_launcher_config_composes(hydra_compose):
    cfg = hydra_compose("sweep", ["hydra/launcher=slurm", "hydra.launcher.partition=p"])
    assert cfg.hydra.launcher._target_.endswith("SlurmLauncher") and cfg.hydra.launcher.partition == "p"


BAD_INPUTS = {
    "unknown-dataset": (["dataset=nope"], "Could not find 'dataset/nope'"),
    "unknown-variant": (["variant=nope"], "Could not find 'variant/nope'"),
    "unknown-variant-key": (["variant=oa_only", "+variant.colour=1"], "bad key 'colour'"),
    "unknown-host": (["host=nope"], "Could not find 'host/nope'"),
    "checkpoint-without-path": (["host=checkpoint"], "host=checkpoint needs host.path"),
    "checkpoint-missing": (["host=checkpoint", "host.path=missing.ckpt"], "no file 'missing.ckpt' in "),
    "not-a-checkpoint": (
        ["host=checkpoint", "host.path=README.md"],
        "README.md could not be read as a torch checkpoint",
    ),
    "missing-csv": (
        ["dataset.source=csv", "~dataset.loader", "+dataset.path=missing.csv"],
        "missing.csv does not exist",
    ),
    "missing-target": (["dataset.target=nope"], "no target column 'nope'"),
    "unknown-hparam": (["+hparams.temperature=2"], "unknown retrofit hyper-parameters"),
    "duplicate-jobs": (["-m", "seed=0,0"], "duplicate units in this sweep"),
    "bad-table-later-in-sweep": (
        ["-m", "dataset=hitters,diabetes", "dataset.target=Salary"],
        "no target column 'Salary'",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_nonzero_with_a_clear_message_and_no_rows(name, tmp_path):
    overrides, message = BAD_INPUTS[name]
    out = run("experiments/sweep.py", *overrides, *out_args(tmp_path))
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "retrofit_rmse.csv").exists()


@pytest.mark.slow
def test_builtin_variants_work_from_an_installed_wheel(tmp_path):
    """Build the wheel, install it into a folder of its own, and resolve a built-in variant there."""
    source = tmp_path / "source"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(ROOT / "retrofit", source / "retrofit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, source],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("*.whl")
    target = tmp_path / "site"
    install = run("-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel))
    assert install.returncode == 0, install.stderr
    code = (
        f"import sys; sys.path.insert(0, {str(target)!r}); import retrofit.variants as v; "
        "assert v.__file__.startswith(sys.path[0]), v.__file__; "
        "print(v.available_variants(), v.resolve_variant('oa_only').eps_den)"
    )
    out = run("-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{BUILTIN_VARIANTS} 1e-06"


@pytest.mark.slow
def test_tau_sweep_writes_one_row_per_variant_and_c(hydra_compose, host, tmp_path):
    from retrofit.jobs.tau_sweep import write_tau_results
    from retrofit.runner.case import run_case

    overrides = ["seeds=[0,1]", "c_values=[0.001,0.1]", "datasets=[diabetes]", f"cache_dir={tmp_path}"]
    cfg = hydra_compose("tau_sweep", overrides + host_args(host)[:4])
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


def test_a_failing_sweep_callback_exits_nonzero_instead_of_warning(capsys):
    with pytest.raises(SystemExit) as user, exit_on_any_error():
        raise RunnerError("bad sweep")
    assert user.value.code == "error: bad sweep"
    with pytest.raises(SystemExit) as bug, exit_on_any_error():
        raise KeyError("a bug")
    assert bug.value.code == 1 and "KeyError: 'a bug'" in capsys.readouterr().err


def help_groups(template: str) -> dict[str, list[str]]:
    """Group -> options, from the `== Configuration groups ==` lines of a help text."""
    groups = template.split("== Configuration groups ==")[1].split("== Config ==")[0]
    return {
        line.split(": ")[0]: line.split(": ")[1].split("   (")[0].split(", ")
        for line in groups.splitlines()
        if ": " in line and not line.startswith(" ")
    }


def test_the_sweep_help_lists_the_options_it_finds_and_a_dataset_added_as_one_file(hydra_compose, tmp_path):
    """`experiments/sweep.py --help` lists the options of the groups a sweep selects from as Hydra
    finds them on the search path (`retrofit.jobs.group_options`): a dataset added as one YAML in a
    folder on the search path composes and is listed; `pretrain`, which is no sweep group, is not."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "toy.yaml").write_text("name: toy\nsource: csv\npath: toy.csv\ntarget: y\n")
    searchpath = f"hydra.searchpath=[{BUILTIN_SEARCHPATH},file://{tmp_path}]"
    cfg = hydra_compose("sweep", [searchpath, "dataset=toy"])
    assert cfg.dataset.name == "toy"
    listed = help_groups(cfg.hydra.help.template)
    assert sorted(listed) == ["dataset", "decomposition", "experiment", "host", "hydra/launcher", "variant"]
    shipped = sorted(path.stem for path in (CONFIGS / "dataset").glob("*.yaml"))
    assert listed["dataset"] == sorted([*shipped, "toy"]) and listed["variant"] == BUILTIN_VARIANTS
    assert listed["host"] == sorted(path.stem for path in (CONFIGS / "host").glob("*.yaml"))
    assert {"basic", "joblib", "submitit_local"} <= set(listed["hydra/launcher"])
    assert help_groups(hydra_compose("sweep").hydra.help.template)["dataset"] == shipped
    out = run("experiments/sweep.py", "--help", searchpath)
    assert out.returncode == 0, out.stderr
    assert help_groups(out.stdout) == listed and "pretrain" not in out.stdout


def test_a_variant_grid_shares_the_baseline_and_a_list_runs_in_one_case(hydra_compose):
    """`-m variant=oa_only,full_o`: two jobs of one case share its baseline unit (not a duplicate);
    `variant=[oa_only,full_o]`: one case with the baseline and both; the same unit run with other
    settings by two jobs, or a repeated job, is still refused."""
    oa, full = case_of(hydra_compose, "variant=oa_only"), case_of(hydra_compose, "variant=full_o")
    check_cases([oa, full])
    assert [u.variant for u in case_of(hydra_compose, "variant=[oa_only,full_o]").units] == [
        "baseline",
        "oa_only",
        "full_o",
    ]
    with pytest.raises(RunnerError, match="duplicate units in this sweep"):
        check_cases([oa, full, oa])  # a repeated job
    with pytest.raises(RunnerError, match=r"variant.eps_den=1e-3 applies to one variant"):
        case_of(hydra_compose, "variant=[oa_only,full_o]", "variant.eps_den=1e-3")
