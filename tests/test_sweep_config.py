"""From a Hydra config to cases and a whole sweep (`retrofit.runner.sweep_config`): the default case,
the variants a case runs and their hyper-parameters, variants and datasets on a search path,
relative paths, the paper table's grid and Hydra's sweep expansion; bad settings, keys and hostile
inputs refused before any work, naming them; the record sweep's grid covering the committed record,
seed lists that select no case refused, a sweep's results added beside other rows."""

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import yaml
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict
from processes import host_args, run_hydra

from retrofit.data import DatasetError
from retrofit.errors import RunnerError
from retrofit.hosts import available
from retrofit.record_guard import RECORD_DIR, RECORD_ENV
from retrofit.results.reproduction import require_covered
from retrofit.runner import reference_of, results_dir_of
from retrofit.runner.case import check_cases
from retrofit.runner.sweep_config import (
    BUILTIN_SEARCHPATH,
    case_from_hydra,
    check_seed_selections,
    sweep_cases,
)
from retrofit.runner.sweep_jobs import sweep_jobs
from retrofit.variants import resolve_variant

ROOT = Path(__file__).resolve().parents[1]


BAD_SETTINGS = {
    "seed-negative": (["seed=-1"], r"seed=-1: must be an integer in \[0, 4294967295\]"),
    "seed-too-large": (["seed=4294967296"], r"seed=4294967296: must be an integer in \[0, 4294967295\], e.g. seed=1"),
    "n_estimators-zero": (["n_estimators=0"], r"n_estimators=0: must be an integer in \[1, 10000\]"),
    "n_estimators-huge": (
        ["n_estimators=1000000000000"],
        r"n_estimators=10+: must be an integer in \[1, 10000\]",
    ),
    "test_size-zero": (["test_size=0"], r"test_size=0(\.0)?: must be a fraction in \(0, 1\)"),
    "test_size-one": (["test_size=1.0"], r"test_size=1.0: must be a fraction in \(0, 1\)"),
    "results_dir-null": (["results_dir=null"], "results_dir is null; give a directory, e.g. results_dir=outputs"),
    "cache_dir-null": (["cache_dir=null"], r"cache_dir is null; give a directory, e.g. cache_dir=\.cache"),
    "cache-in-record": (["cache_dir=results/cache"], r"cache_dir=.*results/cache is inside the committed"),
    "host-name-path": (
        ["host=checkpoint", "host.path=missing.ckpt", "host.name=../x"],
        r"host.name='\.\./x' labels results and names unit directories",
    ),
}
"""A well-typed value out of range: refused when the case is built, naming the fix."""


@pytest.mark.parametrize("name", sorted(BAD_SETTINGS))
def test_bad_settings_are_refused_naming_the_fix(hydra_compose, name):
    overrides, message = BAD_SETTINGS[name]
    cfg = hydra_compose(overrides=overrides)
    with pytest.raises(RunnerError, match=message):
        case_from_hydra(cfg, cfg.hydra)


@pytest.mark.parametrize(
    "make_bad",
    [
        lambda tmp: ("results_dir", tmp / "a_file"),
        lambda tmp: ("cache_dir", tmp / "a_file"),
        lambda tmp: ("results_dir", tmp / "a_file" / "below"),
        lambda tmp: ("cache_dir", Path("/sys/retrofit_cache")),  # not writable, even for root
        lambda tmp: ("results_dir", Path("/sys/retrofit_results")),
    ],
    ids=["results-is-file", "cache-is-file", "results-under-file", "cache-unwritable", "results-unwritable"],
)
def test_output_dirs_that_are_files_or_unwritable_fail_before_the_case(hydra_compose, tmp_path, make_bad):
    (tmp_path / "a_file").write_text("not a directory")
    key, path = make_bad(tmp_path)
    others = {"results_dir": tmp_path / "results", "cache_dir": tmp_path / "cache"} | {key: path}
    cfg = hydra_compose(overrides=[f"{k}={v}" for k, v in others.items()])
    with pytest.raises(RunnerError, match=rf"{key}={path} is not (a directory|writable).*choose another {key}"):
        case_from_hydra(cfg, cfg.hydra)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing created


def make_retrofit_overrides(*variables: str) -> list[str]:
    """The sweep's overrides in `make retrofit`'s recipe as make expands it (`make -n`, with
    `variables` such as GRID_CHANGED=1), without `-m` and the launcher's `hydra...` ones."""
    printed = subprocess.run(
        ["make", "-n", "-s", "-C", str(ROOT), "-o", ".venv/.installed", "retrofit", *variables],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    assert f"{RECORD_ENV}=1" in printed.split("experiments/sweep.py", 1)[0]  # the record target's variable
    sweep = printed.split("experiments/sweep.py", 1)[1].split("&&")[0]  # the sweep's own arguments
    return [arg for arg in shlex.split(sweep) if arg != "-m" and not arg.startswith("hydra")]


@pytest.mark.slow
def test_make_retrofit_passes_the_record_guard_and_covers_the_committed_record(hydra_compose, monkeypatch):
    """The Makefile's own overrides (as make expands them): a whole sweep may write results/,
    against the committed CSV, whose every row one of its units reruns; the same overrides in a
    single run are refused. GRID_CHANGED=1 adds grid_changed=true, refused on this unchanged grid."""
    overrides = make_retrofit_overrides()
    assert "results_dir=results" in overrides
    assert make_retrofit_overrides("GRID_CHANGED=1") == [*overrides, "grid_changed=true"]
    monkeypatch.setenv(RECORD_ENV, "1")
    cfg = hydra_compose(overrides=overrides)
    with open_dict(cfg):
        cfg.hydra.runtime.cwd = str(ROOT)
        cfg.hydra.mode = RunMode.MULTIRUN
        cfg.hydra.overrides.task = overrides
        cfg.hydra.overrides.hydra = ["hydra.mode=MULTIRUN"]
    assert results_dir_of(cfg, cfg.hydra) == RECORD_DIR
    reference = reference_of(cfg, ROOT)
    assert reference.require_all and " at HEAD (" in reference.source
    cases = [case for _, case in sweep_cases(cfg)]
    assert len(cases) == 54
    keys = [case.key(unit) for case in cases for unit in case.units]
    require_covered(reference, keys)
    with pytest.raises(RunnerError, match="would not rerun 1 of the"):
        require_covered(reference, keys[1:])
    with pytest.raises(RunnerError, match="grid_changed=true, but this sweep runs exactly the"):
        require_covered(replace(reference, grid_changed=True), keys)
    cfg.hydra.mode = RunMode.RUN
    with pytest.raises(RunnerError, match="only by a whole sweep"):
        results_dir_of(cfg, cfg.hydra)


@pytest.mark.slow
def test_a_record_sweep_in_a_fresh_checkout_rewrites_its_record_and_reproduces_head(host, tmp_path):
    """`make retrofit`'s flags on a copy of the package (whose `results/` is then the record): the
    whole sweep rewrites it and reproduces the committed CSV, whatever the working tree holds; a
    sweep covering less than the record is refused before it runs."""
    repo = tmp_path / "clone"
    for name in ("retrofit", "experiments", "configs"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONPATH": str(repo), RECORD_ENV: "1"}

    def sweep(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "experiments/sweep.py", "-m", "dataset=diabetes", "variant=oa_only", *args]
        command += [f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={tmp_path / 'multirun'}", *host_args(host)]
        return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900)

    first = sweep("seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "results_dir=outputs/results")
    assert first.returncode == 0, first.stderr
    (repo / "results").mkdir()
    shutil.copy(repo / "outputs" / "results" / "retrofit_rmse.csv", repo / "results" / "retrofit_rmse.csv")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "results/retrofit_rmse.csv"], ["commit", "-q", "-m", "record"]):
        subprocess.run([*git, *args], check=True)
    committed = (repo / "results" / "retrofit_rmse.csv").read_text()
    edited = pd.read_csv(repo / "results" / "retrofit_rmse.csv")
    edited.assign(nll=edited["nll"] + 1).to_csv(repo / "results" / "retrofit_rmse.csv", index=False)
    record = ["results_dir=results", "reference=results/retrofit_rmse.csv", "reference_commit=HEAD"]
    out = sweep("seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *record)
    assert out.returncode == 0, out.stderr
    assert "reproduced: 4/4 rows within 1e-05 (max rel |Δ| 0, " in out.stdout and " at HEAD (" in out.stdout
    assert (repo / "results" / "retrofit_rmse.csv").read_text() == committed  # rewritten from the sweep
    stamp = (repo / "results" / "retrofit_rmse.csv").stat().st_mtime_ns
    partial = sweep("seed=0", *record)
    assert partial.returncode == 1 and "this sweep would not rerun 2 of the 4 rows of" in partial.stderr
    assert "e.g. host=random_v3/dataset=diabetes/seed=1/variant=baseline" in partial.stderr
    assert (repo / "results" / "retrofit_rmse.csv").stat().st_mtime_ns == stamp  # refused before any work


def searchpath_with(tmp_path: Path, files: dict[str, str]) -> str:
    """The override adding a folder with `variant/<name>.yaml` files (`files`: name -> text)."""
    (tmp_path / "variant").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / "variant" / f"{name}.yaml").write_text(text)
    return f"hydra.searchpath=[pkg://retrofit.configs,file://{tmp_path}]"


HOSTILE_BEFORE_WORK = {
    "results-csv-is-a-directory": (
        lambda tmp: [f"results_dir={tmp / 'r'}"],
        lambda tmp: (tmp / "r" / "retrofit_rmse.csv").mkdir(parents=True),
        r"r/retrofit_rmse\.csv is not a file, and this run writes one there; remove it or choose another results_dir",
    ),
    "results-png-is-a-directory": (
        lambda tmp: [f"results_dir={tmp / 'r'}"],
        lambda tmp: (tmp / "r" / "retrofit_deltas.png").mkdir(parents=True),
        r"r/retrofit_deltas\.png is not a file",
    ),
    "results-lock-is-a-link": (
        lambda tmp: [f"results_dir={tmp / 'r'}"],
        lambda tmp: (tmp / "r").mkdir() or (tmp / "r" / ".retrofit_rmse.csv.lock").symlink_to(RECORD_DIR / "audit.csv"),
        r"r/\.retrofit_rmse\.csv\.lock is a link, and .*r/retrofit_rmse\.csv is written under a lock file of that name",
    ),
    "variant-name-too-long": (
        lambda tmp: [searchpath_with(tmp / "s", {"v" * 240: "adapters: []\n"})],
        lambda tmp: None,
        r"variant name 'v{20}'\.\.\. has 240 characters; use at most 100",
    ),
    "variant-yaml-python-tag": (
        lambda tmp: [searchpath_with(tmp / "s", {"evil": 'adapters: !!python/object/apply:os.system ["true"]\n'})],
        lambda tmp: None,
        r"variant=evil \(.*evil\.yaml, line 1\) is not plain YAML: could not determine a constructor .*python",
    ),
}
"""Hostile inputs refused in one line when the run is built, before any computing."""


def test_a_unit_store_linked_into_the_committed_record_is_refused_before_any_work(hydra_compose, tmp_path):
    """cache_dir/runs, a link to results/, had every unit file written into the committed record."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "runs").symlink_to(RECORD_DIR)
    before = sorted(RECORD_DIR.iterdir())
    cfg = hydra_compose(overrides=[f"cache_dir={tmp_path / 'cache'}", f"results_dir={tmp_path / 'r'}"])
    with pytest.raises(RunnerError) as refused:
        case_from_hydra(cfg, cfg.hydra)
    assert str(refused.value) == (
        f"cache_dir={tmp_path / 'cache' / 'runs'} is inside the committed {RECORD_DIR}; "
        "choose another cache_dir, e.g. cache_dir=.cache"
    )
    assert sorted(RECORD_DIR.iterdir()) == before and not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", sorted(HOSTILE_BEFORE_WORK))
def test_hostile_inputs_are_refused_in_one_line_before_any_work(hydra_compose, tmp_path, name):
    overrides, prepare, message = HOSTILE_BEFORE_WORK[name]
    prepare(tmp_path)
    cfg = hydra_compose(overrides=[*overrides(tmp_path), f"cache_dir={tmp_path / 'cache'}"])
    with pytest.raises(RunnerError, match=message) as refused:
        case_from_hydra(cfg, cfg.hydra)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_two_sweeps_into_one_results_dir_keep_each_others_rows(host, tmp_path):
    """A sweep used to write exactly its own rows, so of two sweeps into one results_dir the last to
    finish won; a sweep now adds its rows as single runs do (the record alone is written whole)."""
    common = [*host_args(host), "variant=oa_only", f"results_dir={tmp_path / 'r'}", f"cache_dir={tmp_path / 'c'}"]
    for seed in ("0", "1"):
        out = run_hydra(str(ROOT / "experiments" / "sweep.py"), "-m", f"seed={seed}", *common, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "r" / "retrofit_rmse.csv")
    assert sorted(zip(frame.seed, frame.variant, strict=True)) == [
        (0, "baseline"),
        (0, "oa_only"),
        (1, "baseline"),
        (1, "oa_only"),
    ]


def test_a_variant_listed_twice_is_refused_not_dropped(hydra_compose):
    """`variant=[oa_only,oa_only]` used to run oa_only once, the repeat dropped in silence."""
    cfg = hydra_compose("sweep", ["variant=[oa_only,full_o,oa_only]"])
    with pytest.raises(RunnerError, match=r"variant=\[\.\.\.\] lists oa_only more than once; list each variant once"):
        case_from_hydra(cfg, cfg.hydra)


def test_seed_lists_that_select_no_case_of_a_sweep_are_refused():
    """timing.seeds and decomposition.seeds take effect on at least one job of the sweep, or the
    sweep is refused naming the key and the seeds it runs."""

    def jobs(timing_seeds, arm_seeds, rounds=3):
        node = {"timing": {"rounds": rounds, "seeds": timing_seeds}, "decomposition": {"seeds": arm_seeds}}
        return [(OmegaConf.create(node), SimpleNamespace(seed=seed)) for seed in (1, 2)]

    check_seed_selections(jobs(None, None))
    check_seed_selections(jobs([2], [1, 5]))
    check_seed_selections(jobs([0], None, rounds=0))  # not timed at all: the list is not used
    with pytest.raises(RunnerError, match=r"timing.seeds=\[0\] selects no case of this sweep \(its seeds: \[1, 2\]\)"):
        check_seed_selections(jobs([0], None))
    with pytest.raises(RunnerError, match=r"decomposition.seeds=\[\] selects no case"):
        check_seed_selections(jobs(None, []))


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["timing.seeds=[7]"], "timing.seeds=[7]"),
        (["+decomposition=sink_presence", "decomposition.seeds=[3]"], "decomposition.seeds=[3]"),
    ],
    ids=["timing", "decomposition"],
)
def test_a_single_runs_seed_list_without_its_seed_is_refused_before_any_work(tmp_path, overrides, key):
    """A single run timed nothing (or ran no arm) in silence when the list left out its seed."""
    results = tmp_path / "results"
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), *overrides, f"results_dir={results}", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr[-3000:]
    assert out.stderr.startswith(f"error: {key} selects no case of this sweep (its seeds: [0])"), out.stderr
    assert not results.exists() and not (tmp_path / ".cache").exists()


BUILTIN_VARIANTS = ["baseline", "full_o", "o_closed", "oa_only"]


def case_of(hydra_compose, *overrides: str):
    cfg = hydra_compose("sweep", overrides)
    return case_from_hydra(cfg, cfg.hydra)


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


def test_the_experiments_over_the_shipped_hosts_list_every_one(hydra_compose):
    """Every default host list is the shipped hosts, in `SHIPPED_HOSTS` order, and each has a
    `host=` option (`configs/host/<name>.yaml`) naming it."""
    for name in ("host_quality", "preset_selection", "audit", "sweep_cost"):
        assert list(hydra_compose(name).hosts) == available(), name
    for host in available():
        assert case_of(hydra_compose, f"host={host}").host == host


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
    assert swept.resolved().name == in_python.name == "oa_relative"  # one file, one name
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


def test_relative_paths_are_taken_from_the_start_directory(hydra_compose, tmp_path):
    cfg = hydra_compose("sweep", ["cache_dir=out/cache"])
    with open_dict(cfg):
        cfg.hydra.runtime.cwd = str(tmp_path)
    assert case_from_hydra(cfg, cfg.hydra).runs_dir == tmp_path / "out" / "cache" / "runs"


def test_paper_table_is_54_distinct_cases_on_every_shipped_host_timed_on_seed_0(hydra_compose):
    benchmark_datasets = hydra_compose("host_quality").benchmark_datasets.split(",")
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
