"""The runner as a hostile user meets it: no result lost (guarded writes, unit identity covering the
settings, output directories checked first), none faked (a verified cache, a reproduction check on
every numeric column against the file named), bad settings refused before any work."""

import json
import logging
import multiprocessing
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import open_dict
from processes import run_python
from test_aggregate import record

from retrofit.data import DatasetSpec
from retrofit.errors import RunnerError
from retrofit.record_guard import RECORD_DIR, RECORD_ENV
from retrofit.results import aggregate as agg
from retrofit.results.compare import TIMES as NOT_COMPARED
from retrofit.results.compare import check, read_reference, require_covered
from retrofit.results.tables import headline, table_markdown
from retrofit.runner.case import UnitSpec, check_cases, run_case, stored_rows
from retrofit.runner.config import case_from_hydra
from retrofit.runner.hydra_callbacks import sweep_cases
from retrofit.runner.schema import reference_of, results_dir_of
from retrofit.runner.store import UnitStore, row_digest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def host(make_random_host):
    return make_random_host("tabpfn_v3")


@pytest.fixture(scope="module")
def case_on(make_case):
    """`make_case` with this file's defaults: diabetes, baseline and oa_only, one member."""
    return partial(make_case, units=(UnitSpec("baseline"), UnitSpec("oa_only")), n_estimators=1)


run = partial(run_python, HYDRA_FULL_ERROR="0")


def host_args(host: Path) -> list[str]:
    return ["host=checkpoint", f"host.path={host}", "host.name=random_v3", "n_estimators=1", "timing.rounds=0"]


def record_state() -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in RECORD_DIR.iterdir()}


# --- settings validated before any work -------------------------------------------------------

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


@pytest.mark.parametrize("name", sorted(MISTYPED_SETTINGS))
def test_mistyped_settings_are_refused_when_composed_naming_the_override(hydra_compose, name):
    overrides, message = MISTYPED_SETTINGS[name]
    with pytest.raises(ConfigCompositionException) as refused:
        hydra_compose(overrides=overrides)
    said = f"{refused.value} {refused.value.__cause__}"
    assert f"Error merging override {overrides[0]}" in said and re.search(message, said), said


@pytest.mark.parametrize("name", sorted(BAD_SETTINGS))
def test_bad_settings_are_refused_naming_the_fix(hydra_compose, name):
    overrides, message = BAD_SETTINGS[name]
    cfg = hydra_compose(overrides=overrides)
    with pytest.raises(RunnerError, match=message):
        case_from_hydra(cfg, cfg.hydra)


def test_seeds_of_the_tau_sweep_are_integers_too(hydra_compose):
    with pytest.raises(ConfigCompositionException) as refused:
        hydra_compose("tau_sweep", ["seeds=[1.5]"])
    assert "could not be converted to Integer" in str(refused.value.__cause__)
    assert "seeds[0]" in str(refused.value.__cause__)


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


# --- the committed record is written only by make retrofit -----------------------------------


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
@pytest.mark.parametrize(
    "command, recording, message",
    [
        (["experiments/sweep.py", "+experiment=paper_table"], "0", "is in the committed record"),
        (["experiments/sweep.py", "-m", "seed=0,1"], "0", "is in the committed record"),
        (["experiments/sweep.py", "reference=results/retrofit_rmse.csv"], "1", "run make retrofit"),
        (["experiments/aggregate.py", "cache_dir=.no_such_cache"], "0", "is in the committed record"),
    ],
    ids=["single-paper-table", "sweep-without-record-variable", "single-with-record-variable", "aggregate"],
)
def test_commands_aimed_at_the_record_refuse_and_leave_it_alone(host, tmp_path, command, recording, message):
    """`dataset.target=nope` makes any run that got past the guard fail before writing, so a broken
    guard fails this test without touching results/."""
    before = record_state()
    out = run(
        *command,
        "results_dir=results",
        "dataset.target=nope",
        f"hydra.run.dir={tmp_path}",
        f"hydra.sweep.dir={tmp_path}",
        *host_args(host)[:3],
        **{RECORD_ENV: recording},
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert message in out.stderr, out.stderr
    assert record_state() == before


@pytest.mark.slow
def test_aggregating_a_mistyped_cache_writes_nothing_and_says_why(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "retrofit_rmse.csv").write_text("dataset,rmse\nwage,1.0\n")
    out = run(
        str(ROOT / "experiments" / "aggregate.py"),
        f"results_dir={results}",
        f"cache_dir={tmp_path / 'cahce'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert out.returncode == 1 and "4 units of this run have no result in " in out.stderr
    assert str(tmp_path / "cahce" / "runs") in out.stderr and "Traceback" not in out.stderr
    assert (results / "retrofit_rmse.csv").read_text() == "dataset,rmse\nwage,1.0\n"
    assert sorted(p.name for p in results.iterdir()) == ["retrofit_rmse.csv"]


@pytest.mark.slow
def test_aggregation_names_the_sweeps_units_by_identity_and_what_is_missing(host, tmp_path):
    """`aggregate.py` with the sweep's overrides (another results_dir) writes the sweep's own CSV from
    the store, and one job of it without -m; a job the sweep did not run, a unit deleted from the
    store and a host file changed since are each named, and nothing is written."""
    sweep = [
        "-m",
        "dataset=diabetes",
        "variant=oa_only",
        "seed=0,1",
        f"cache_dir={tmp_path / 'cache'}",
        *host_args(host),
    ]
    out = run(str(ROOT / "experiments" / "sweep.py"), *sweep, f"results_dir={tmp_path / 'a'}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "cache" / "runs").glob("*.json"))) == 4

    def aggregate(*args: str, results: str = "b") -> subprocess.CompletedProcess:
        command = [str(ROOT / "experiments" / "aggregate.py"), *sweep, *args, f"results_dir={tmp_path / results}"]
        return run(*command, cwd=tmp_path)

    out = aggregate()
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "b" / "retrofit_rmse.csv").read_bytes() == (tmp_path / "a" / "retrofit_rmse.csv").read_bytes()
    single = [arg for arg in sweep if arg not in ("-m", "seed=0,1")]  # one job of the sweep, as a single run
    out = run(
        str(ROOT / "experiments" / "aggregate.py"), *single, "seed=1", f"results_dir={tmp_path / 'd'}", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert set(pd.read_csv(tmp_path / "d" / "retrofit_rmse.csv").seed) == {1}
    out = aggregate("seed=0,1,2", results="c")
    assert out.returncode == 1 and "2 units of this run have no result in " in out.stderr
    assert "e.g. host=random_v3/dataset=diabetes/seed=2/variant=baseline;" in out.stderr
    assert not (tmp_path / "c").exists()
    units = {path: json.loads(path.read_text()) for path in (tmp_path / "cache" / "runs").glob("*.json")}
    unit = next(path for path, row in units.items() if (row["seed"], row["variant"]) == (1, "oa_only"))
    unit.unlink()
    out = aggregate(results="c")
    assert out.returncode == 1 and not (tmp_path / "c").exists()
    assert "1 units of this run have no result in " in out.stderr
    assert "e.g. host=random_v3/dataset=diabetes/seed=1/variant=oa_only;" in out.stderr
    changed = tmp_path / "copy" / host.name
    changed.parent.mkdir()
    shutil.copy(host, changed)
    sweep[sweep.index(f"host.path={host}")] = f"host.path={changed}"
    assert (
        run(str(ROOT / "experiments" / "sweep.py"), *sweep, f"results_dir={tmp_path / 'a'}", cwd=tmp_path).returncode
        == 0
    )
    with changed.open("ab") as file:
        file.write(b" ")  # the host file changes after the sweep: named, never served
    out = aggregate(results="c")
    assert out.returncode == 1 and str(changed) in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "c").exists()


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


# --- unit identity covers every setting that changes a number -------------------------------


@pytest.mark.parametrize(
    "change",
    [{"n_estimators": 2}, {"test_size": 0.4}, {"precision": "float64"}, {"threads": 2}, {"device": "cuda"}],
    ids=["n_estimators", "test_size", "precision", "threads", "device"],
)
def test_every_setting_that_changes_a_number_is_part_of_the_unit_identity(host, tmp_path, change, case_on):
    units = (UnitSpec("oa_only"),)
    (first,), (other,) = (
        case.identities().items()
        for case in (case_on(host, tmp_path, units=units), case_on(host, tmp_path, units=units, **change))
    )
    assert first[0] == other[0] and first[1] != other[1]  # one name, two identities


def test_another_host_file_or_dataset_spec_under_the_same_name_is_another_unit(
    make_random_host, host, tmp_path, case_on, dataset_spec
):
    units = (UnitSpec("oa_only"),)
    base = case_on(host, tmp_path, units=units)
    other_host = case_on(make_random_host("tabpfn_v3", seed=1), tmp_path, units=units)
    other_spec = case_on(host, tmp_path, units=units, dataset=replace(dataset_spec("diabetes"), max_rows=50))
    identities = {identity for case in (base, other_host, other_spec) for identity in case.identities().values()}
    assert len(identities) == 3


SETTINGS = [{"n_estimators": 1}, {"n_estimators": 2}]


@pytest.mark.slow
def test_two_concurrent_sweeps_differing_in_one_setting_keep_their_own_rows(host, tmp_path, case_on):
    runs = tmp_path / "shared"
    worker = [sys.executable, str(Path(__file__).with_name("case_worker.py")), str(host), str(runs), "diabetes", "0,1"]
    procs = [subprocess.Popen([*worker, str(s["n_estimators"])], stderr=subprocess.PIPE) for s in SETTINGS]
    errors = [p.communicate(timeout=900)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    for settings in SETTINGS:
        for seed in (0, 1):
            shared = stored_rows(case_on(host, runs, seed=seed, **settings))
            assert None not in shared.values()  # every unit of each sweep is still there, current
            alone = run_case(case_on(host, tmp_path / f"alone_{settings['n_estimators']}", seed=seed, **settings))
            assert [r["rmse"] for r in shared.values()] == [r["rmse"] for r in alone]
            assert {r["n_estimators"] for r in shared.values()} == {settings["n_estimators"]}
    assert len(list(runs.rglob("*.json"))) == 2 * 2 * 2


# --- a verified cache: edited, damaged or incomplete units are never served -------------------


@pytest.fixture(scope="module")
def finished(host, tmp_path_factory, case_on):
    """A finished case's unit store and its rows."""
    runs = tmp_path_factory.mktemp("finished")
    return runs, run_case(case_on(host, runs))


def oa_only_file(runs: Path) -> Path:
    (path,) = [path for path in runs.glob("*.json") if '"variant": "oa_only"' in path.read_text()]
    return path


def edit_value(column):
    def edit(text: str) -> str:
        row = json.loads(text)
        row[column] = row[column] * 1.5 + 0.01
        return json.dumps(row)

    return edit


def remove(column):
    def edit(text: str) -> str:
        row = json.loads(text)
        del row[column]
        return json.dumps(row)

    return edit


def forge(**values):
    """An edit that sets `values` and writes the row digest again (a plain sha256 anyone can recompute)."""

    def edit(text: str) -> str:
        row = json.loads(text)
        del row["row_digest"]
        row.update(values)
        return json.dumps({**row, "row_digest": row_digest(row)})

    return edit


EDITS = {
    **{f"edited-{c}": edit_value(c) for c in ("rmse", "delta_rmse_pct", "nll", "delta_nll", "crps", "coverage_90")},
    **{
        f"forged-{c}": forge(**{c: -42.0})
        for c in ("delta_rmse_pct", "delta_nll", "delta_crps_pct", "delta_coverage_90")
    },
    "forged-time-ratio": forge(predict_time_ratio=0.5),
    "forged-host": forge(host="tiny_v2"),
    "forged-dataset": forge(dataset="wage"),
    "forged-seed": forge(seed=7),
    "nested-5000-deep": lambda text: "[" * 5000 + "]" * 5000,
    "text-in-rmse": forge(rmse="0.5"),
    "text-in-seed": forge(seed="zero"),
    "removed-nll": remove("nll"),
    "removed-digest": remove("row_digest"),
    "truncated": lambda text: text[: len(text) // 2],
    "not-an-object": lambda text: "[1, 2, 3]",
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_tampered_unit_is_named_and_recomputed_never_served(finished, host, tmp_path, caplog, name, case_on):
    source, rows = finished
    runs = tmp_path / "runs"
    subprocess.run(["cp", "-r", str(source), str(runs)], check=True)
    path = oa_only_file(runs)
    path.write_text(EDITS[name](path.read_text()))
    if not name.startswith(("forged-host", "forged-dataset", "forged-seed")):  # labels: valid, but not this unit's
        with pytest.raises(RunnerError, match=rf"unit file {path} "):
            UnitStore(runs).read(path)
    with caplog.at_level(logging.WARNING, logger="retrofit.runner.store"):
        again = run_case(case_on(host, runs))
    assert f"unit file {path}" in caplog.text and "recomputing that unit" in caplog.text
    assert [r["rmse"] for r in again] == [r["rmse"] for r in rows]
    assert [r["nll"] for r in again] == [r["nll"] for r in rows]
    assert UnitStore(runs).read(path)["rmse"] == rows[1]["rmse"]  # the recomputed file verifies


# --- the reproduction check: every numeric column, the file named, subsets said -----------------


def reference_frame(tmp_path: Path, rows: list[dict]) -> pd.DataFrame:
    agg.aggregate(tmp_path, rows, table=False)
    return pd.read_csv(tmp_path / "retrofit_rmse.csv")


RESULT_COLUMNS = ["rmse", "delta_rmse_pct", "nll", "delta_nll", "crps", "delta_crps_pct", "coverage_90"]


@pytest.mark.parametrize("column", [*RESULT_COLUMNS, "delta_coverage_90", "baseline_rmse"])
@pytest.mark.parametrize("side", ["new", "reference"])
def test_an_edit_of_any_result_column_on_either_side_fails_by_name(finished, tmp_path, column, side):
    frame = reference_frame(tmp_path, finished[1])
    edited = frame.copy()
    edited.loc[1, column] += 2e-3  # beyond every tolerance (1e-3 points on the % deltas)
    new, reference = (edited, frame) if side == "new" else (frame, edited)
    outcome = check(new, reference)
    assert not outcome.ok and len(outcome.differing) == 1 and f"({column})" in outcome.differing[0]
    assert f"; 1 differing: host=random_v3/dataset=diabetes/seed=0/variant=oa_only ({column})" in outcome.line()


def test_timings_are_not_compared_and_one_sided_columns_are_named(finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    assert set(agg.COLUMNS) & NOT_COMPARED == {c for c in agg.COLUMNS if "seconds" in c or "time" in c}
    timed = frame.assign(**{c: 7.0 for c in NOT_COMPARED})
    assert check(timed, frame).ok
    outcome = check(frame.drop(columns=["crps"]), frame.assign(extra_score=1.0))
    assert not outcome.ok and outcome.one_sided == ("crps (reference only)", "extra_score (reference only)")
    assert "2 columns in one file only: crps (reference only), extra_score (reference only)" in outcome.line()


def test_a_subset_is_compared_as_such_unless_every_row_is_required(finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    doubled = pd.concat([frame, frame.assign(seed=1)], ignore_index=True)
    outcome = check(frame, doubled)
    assert outcome.ok and (outcome.within, outcome.compared) == (2, 2)
    assert "subset: 2 of the reference's 4 rows ran" in outcome.line()
    reference = read_reference(_csv(tmp_path, doubled), require_all=True)
    strict = check(frame, reference)
    assert not strict.ok and "2 missing: host=random_v3/dataset=diabetes/seed=1/variant=baseline" in strict.line()


def _csv(tmp_path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(tmp_path / "ref.csv", index=False)
    return tmp_path / "ref.csv"


def test_the_named_reference_is_read_from_the_working_tree_or_the_commit_named(hydra_compose, finished, tmp_path):
    """An uncommitted edit of the reference counts unless a commit is named; the line says which."""
    frame = reference_frame(tmp_path, finished[1])
    csv = _csv(tmp_path, frame)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", csv.name], ["commit", "-q", "-m", "reference"]):
        subprocess.run([*git, *args], check=True)
    frame.assign(nll=frame["nll"] + 1).to_csv(csv, index=False)  # uncommitted edit
    tree = reference_of(hydra_compose(overrides=[f"reference={csv}"]), ROOT)
    head = reference_of(hydra_compose(overrides=[f"reference={csv}", "reference_commit=HEAD"]), ROOT)
    assert tree.frame["nll"].tolist() == (frame["nll"] + 1).tolist() and tree.source.endswith("(working tree)")
    assert head.frame["nll"].tolist() == frame["nll"].tolist() and " at HEAD (" in head.source
    assert not check(frame, tree).ok and check(frame, head).ok
    assert f"vs {head.source};" in check(frame, head).line()


def test_a_reference_that_is_not_a_results_table_is_refused_when_read(hydra_compose, finished, tmp_path):
    frame = reference_frame(tmp_path, finished[1])
    bad = {
        "repeated.csv": (pd.concat([frame, frame.iloc[:1]]), "lists 1 units twice, e.g. host=random_v3"),
        "nokey.csv": (frame.drop(columns=["variant"]), r"lacks the columns \['variant'\]"),
        "text.csv": (frame.assign(nll="abc"), "column 'nll' holds text where numbers belong"),
        "badseed.csv": (frame.assign(seed=0.5), "has a seed that is not an integer"),
    }
    for name, (table, message) in bad.items():
        table.to_csv(tmp_path / name, index=False)
        with pytest.raises(RunnerError, match=message):
            read_reference(tmp_path / name)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(RunnerError, match="is not a readable CSV"):
        read_reference(tmp_path / "empty.csv")
    with pytest.raises(RunnerError, match="reference_commit=HEAD needs reference="):
        reference_of(hydra_compose(overrides=["reference_commit=HEAD"]), ROOT)


# --- guards without holes ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_single_run_checks_its_own_rows_against_the_reference(host, tmp_path):
    """`reference=` takes effect on a single run too: the reproduction line, and a failure when the
    reference's nll for one of its units differs (the run's units come from the cache)."""
    common = [*host_args(host), "variant=oa_only", f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path}/h"]
    first = run("experiments/sweep.py", f"results_dir={tmp_path / 'a'}", *common)
    assert first.returncode == 0, first.stderr
    rows = pd.read_csv(tmp_path / "a" / "retrofit_rmse.csv")
    rows.to_csv(tmp_path / "same.csv", index=False)
    rows.assign(nll=rows["nll"] + 0.5).to_csv(tmp_path / "other.csv", index=False)
    same = run("experiments/sweep.py", f"results_dir={tmp_path / 'b'}", f"reference={tmp_path / 'same.csv'}", *common)
    assert same.returncode == 0, same.stderr
    assert "reproduced: 2/2 rows within 1e-05" in same.stdout
    other = run("experiments/sweep.py", f"results_dir={tmp_path / 'c'}", f"reference={tmp_path / 'other.csv'}", *common)
    assert other.returncode == 1 and "Traceback" not in other.stderr
    assert "error: not reproduced (reproduced: 0/2 rows" in other.stderr and "(nll)" in other.stderr


def _accumulate(results_dir: Path, barrier, dataset: str) -> None:
    """One writer: waits for the other, then adds its case's two rows to `results_dir`."""
    barrier.wait()
    agg.aggregate(results_dir, [record(dataset, "baseline", 0.0), record(dataset, "oa_only", 1.0)], keep=True)


def test_concurrent_single_runs_into_one_results_dir_never_lose_rows(tmp_path):
    """Two processes released together (a barrier), three times over: every row of every writer is
    in the CSV at the end."""
    context = multiprocessing.get_context("fork")
    for attempt in range(3):
        barrier = context.Barrier(2)
        writers = [context.Process(target=_accumulate, args=(tmp_path, barrier, f"d{attempt}_{i}")) for i in range(2)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=300)
        assert [writer.exitcode for writer in writers] == [0, 0]
    frame = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(set(frame["dataset"])) == [f"d{attempt}_{i}" for attempt in range(3) for i in range(2)]
    assert len(frame) == 12


def test_two_datasets_under_one_name_in_one_sweep_are_refused(host, tmp_path, case_on, dataset_spec):
    spec = dataset_spec("diabetes")
    cases = [case_on(host, tmp_path, dataset=spec), case_on(host, tmp_path, dataset=replace(spec, max_rows=50))]
    with pytest.raises(RunnerError, match=r"two datasets of this sweep are named 'diabetes' .*give each its own name"):
        check_cases(cases)


def test_runs_of_different_settings_are_kept_apart_and_said_never_pooled(tmp_path):
    rows = [record("a", "oa_only", 1.0, n_estimators=1), record("b", "oa_only", 3.0, n_estimators=8)]
    rows += [record("a", "baseline", 0.0, n_estimators=1), record("b", "baseline", 0.0, n_estimators=8)]
    frame = agg.aggregate(tmp_path, rows)
    line = headline(frame)
    assert line.startswith("Rows differ in n_estimators: kept apart")
    assert "h (n_estimators=1) ΔRMSE %" in line and "h (n_estimators=8) ΔRMSE %" in line
    assert "+1.000" in line and "+3.000" in line and "+2.000" not in line  # never the pooled mean
    table = (tmp_path / "retrofit_table.md").read_text()
    assert "Rows differ in n_estimators" in table and "+2.000" not in table
    same = agg.aggregate(tmp_path / "same", [r for r in rows if r.n_estimators == 1])
    assert "Rows differ" not in headline(same)


def test_new_timing_settings_retime_a_cached_unit_and_are_shown(host, tmp_path, case_on):
    units = (UnitSpec("baseline"), UnitSpec("oa_only"))
    first = run_case(case_on(host, tmp_path, units=units, timing_rounds=1))
    again = run_case(case_on(host, tmp_path, units=units, timing_rounds=1))
    assert [r["identity"] for r in again] == [r["identity"] for r in first]  # reused
    retimed = run_case(case_on(host, tmp_path, units=units, timing_rounds=2, timing_members=2))
    assert [(r["timing_rounds"], r["timing_members"]) for r in first] == [(1, 1), (1, 1)]
    assert [(r["timing_rounds"], r["timing_members"]) for r in retimed] == [(2, 2), (2, 2)]
    assert [r["rmse"] for r in retimed] == [r["rmse"] for r in first]  # the numbers stay
    frame = agg.frame_of(retimed)
    assert "(2 rounds, 2 members)" in table_markdown(frame)


def test_an_edited_csv_dataset_is_another_unit_recomputed(host, tmp_path, case_on):
    table = pd.DataFrame({"x1": np.linspace(0, 1, 80), "x2": np.cos(np.arange(80)), "y": np.sin(np.arange(80))})
    table.to_csv(tmp_path / "mine.csv", index=False)
    raw = {"name": "mine", "source": "csv", "target": "y", "path": str(tmp_path / "mine.csv")}
    spec = DatasetSpec.from_mapping(raw)
    first = run_case(case_on(host, tmp_path / "runs", dataset=spec))
    table.assign(y=table["y"] * 10 + 100).to_csv(tmp_path / "mine.csv", index=False)
    edited = run_case(case_on(host, tmp_path / "runs", dataset=spec))
    assert edited[0]["baseline_rmse"] > 5 * first[0]["baseline_rmse"]
    assert edited[0]["data_digest"] != first[0]["data_digest"]
    assert len(list((tmp_path / "runs").rglob("*.json"))) == 4  # both kept, each under its own identity


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
def test_ctrl_c_under_the_basic_launcher_says_interrupted_and_exits_130(host, tmp_path):
    """SIGINT once the first unit is stored (a results file under `<cache_dir>/runs`, not the job
    check before): `interrupted`, exit 130, no traceback; the stored unit is
    kept for the next run."""
    runs = tmp_path / "cache" / "runs"
    # 40 cases of a tiny host (about 0.2 s each): the interrupt lands mid-sweep however fast the first one is stored
    command = [sys.executable, "experiments/sweep.py", "-m", "seed=range(0,40)", "variant=oa_only"]
    command += [f"cache_dir={tmp_path / 'cache'}", f"results_dir={tmp_path / 'r'}", f"hydra.sweep.dir={tmp_path / 'm'}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    sweep = subprocess.Popen(
        [*command, *host_args(host)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        # as from a shell: a child inherits an ignored SIGINT (a test runner's worker may ignore it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while not list(runs.rglob("*.json")) and sweep.poll() is None:
        time.sleep(0.05)  # waits for the first stored unit (no assertion on time)
    assert sweep.poll() is None, "the sweep ended before the interrupt: give it more cases"
    sweep.send_signal(signal.SIGINT)
    stderr = sweep.communicate(timeout=600)[1]
    assert sweep.returncode == 130, stderr
    assert "interrupted: finished units are kept" in stderr and "Traceback" not in stderr
    assert list(runs.rglob("*.json"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["variant=evil"], "error: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object"),
        (["dataset=concrete"], "error: In 'sweep': Could not find 'dataset/concrete' Available options in 'dataset'"),
    ],
    ids=["python-tag-chosen-by-name", "unknown-option"],
)
def test_a_config_that_does_not_compose_is_one_line_from_the_entry_point(tmp_path, overrides, message):
    """Hydra composes these before the job runs, where it would print a stack trace; the entry point
    says them in one line, exit status 1, and the tagged YAML runs nothing (no marker file)."""
    marker = tmp_path / "ran"
    searchpath = searchpath_with(
        tmp_path / "s", {"evil": f'adapters: !!python/object/apply:os.system ["touch {marker}"]\n'}
    )
    command = [sys.executable, "experiments/sweep.py", *overrides, searchpath, f"results_dir={tmp_path / 'r'}"]
    out = subprocess.run(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[-1].startswith(message) and not marker.exists()


def test_rows_recomputed_from_changed_inputs_are_listed_not_failed_and_machines_named(finished, tmp_path):
    """A host change on purpose: rows whose host file differs from the reference's are listed as
    recomputed from changed inputs; the same numbers under the same inputs must still agree."""
    frame = reference_frame(tmp_path, finished[1])
    moved = frame.assign(host_digest="another", rmse=frame["rmse"] * 1.01)
    outcome = check(moved, frame)
    assert outcome.ok and not outcome.differing
    assert "2 recomputed from changed inputs: host=random_v3/dataset=diabetes/seed=0/variant=baseline" in outcome.line()
    assert not check(frame.assign(rmse=frame["rmse"] * 1.01), frame).ok  # same inputs: a failure
    assert f"reference computed on {frame['machine'].iloc[0]}; this run on {frame['machine'].iloc[0]}" in outcome.line()
    assert "; BLAS " in frame["machine"].iloc[0] and "; torch " in frame["machine"].iloc[0]


# --- make arguments are data ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize(
    "a",
    ['x.csv"; touch PWNED; echo "', "q`id>&2`.csv", "$(shell touch PWNED)", "$$(touch PWNED).csv"],
    ids=["quote-break", "backquote", "make-shell", "dollar-paren"],
)
def test_make_compare_hands_its_file_names_over_as_data(tmp_path, a):
    """`make compare A=<text>` passes A's text to the program untouched: no shell and no make function
    runs any part of it; the program names the file it could not find, character for character."""
    out = subprocess.run(
        ["make", "-C", str(ROOT), "-o", ".venv/.installed", "compare", f"A={a}", f"B={tmp_path / 'b.csv'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert out.returncode != 0
    assert not (tmp_path / "PWNED").exists() and not (ROOT / "PWNED").exists()
    assert "uid=" not in out.stdout + out.stderr
    assert f"error: A {a} does not exist" in out.stderr, out.stderr


def test_a_reference_commit_without_git_on_the_path_is_refused(tmp_path, monkeypatch):
    """Without git, reference_commit=HEAD used to read the working tree as if outside a checkout and
    report the run reproduced even where HEAD's file differs."""
    csv = tmp_path / "retrofit_rmse.csv"
    csv.write_text("host,dataset,seed,variant\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no_git_here"))
    with pytest.raises(
        RunnerError, match=r"reference_commit=HEAD needs git, which is not on PATH; .*reference_commit=null"
    ):
        read_reference(csv, "HEAD")


# --- what Hydra writes is checked before it writes ----------------------------------------------


def _tree(folder: Path) -> dict[str, int]:
    """Every file under `folder` (relative name -> mtime), to see that nothing was added or touched."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["hydra.job_logging.handlers.file.filename={record}/noise_floor.csv"],
            "hydra.job_logging.handlers.file.filename puts",
        ),
        (["hydra.run.dir={record}"], "hydra.run.dir puts Hydra's files at"),
        (["-m", "hydra.sweep.dir={record}/x"], "hydra.sweep.dir puts Hydra's files at"),
        (["-m", "hydra.sweep.dir={tmp}/s", "hydra.sweep.subdir=../../{up}/results"], "hydra.sweep.subdir puts"),
        (["+experiment=../../../../{tmp_rel}/evil"], "experiment=../../../../"),
        (["-m", "variant=oa_only,../evil"], "variant=oa_only,../evil: a config group option is a name, not a path"),
        (["results_dir="], "results_dir is empty; give a directory, e.g. results_dir=outputs/results"),
        (["hydra.run.dir="], "hydra.run.dir is empty; leave it at its default (under outputs/)"),
        (["-m", "hydra.sweep.dir="], "hydra.sweep.dir is empty; leave it at its default (under outputs/)"),
    ],
    ids=[
        "log-file",
        "run-dir",
        "sweep-dir",
        "sweep-subdir",
        "experiment-path",
        "variant-path",
        "empty-results-dir",
        "empty-run-dir",
        "empty-sweep-dir",
    ],
)
def test_no_override_makes_hydra_write_into_the_record(tmp_path, args, message):
    """Hydra writes its run folder, `.hydra/`, `multirun.yaml` and log files before the job checks
    anything: these overrides used to put them (or a log line) into the committed results/, or the
    sweep's five files into the current folder (`results_dir=`). Each is refused in one line, first
    (an empty results_dir by the job, so only Hydra's own folder under outputs/ exists)."""
    (tmp_path / "evil.yaml").write_text("# @package _global_\nhydra:\n  run:\n    dir: results/hx\n")
    fields = {
        "record": RECORD_DIR,
        "tmp": tmp_path,
        "up": "/".join([".."] * len(tmp_path.parts)) + str(ROOT),
        "tmp_rel": os.path.relpath(tmp_path, "/"),
    }
    before, cwd_before = _tree(RECORD_DIR), _tree(tmp_path)
    out = run(
        str(ROOT / "experiments" / "sweep.py"), *(a.format(**fields) for a in args), cwd=tmp_path, **{RECORD_ENV: "0"}
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and message in out.stderr, out.stderr
    assert _tree(RECORD_DIR) == before
    assert {name: t for name, t in _tree(tmp_path).items() if not name.startswith("outputs")} == cwd_before


def test_a_config_dir_whose_config_its_own_configs_would_hide_is_refused(tmp_path):
    """`-cd <dir>` with a sweep.yaml setting n_estimators: 3 used to run with 8 (configs/sweep.yaml
    comes first on Hydra's search path), silently; a config of its own name takes effect (-cn)."""
    own = (ROOT / "configs" / "sweep.yaml").read_text().replace("n_estimators: 8 ", "n_estimators: 3 ")
    (tmp_path / "sweep.yaml").write_text(own)
    out = run(str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert (
        f"--config-dir {tmp_path}: its sweep.yaml would not be read, {ROOT / 'configs' / 'sweep.yaml'} comes first"
        in out.stderr
    )
    (tmp_path / "sweep.yaml").rename(tmp_path / "mine.yaml")
    out = run(str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), "-cn", "mine", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 0 and "\nn_estimators: 3\n" in out.stdout, out.stderr


def test_each_command_gets_a_hydra_folder_of_its_own(hydra_compose):
    """Two commands started in the same second used to share one run folder (its name was the time
    alone); it now ends in the process id, the same for every job of one command."""
    from hydra.core.utils import JobRuntime  # noqa: F401 - Hydra's resolvers (now) are registered on import

    cfg = hydra_compose(overrides=["hydra.job.name=sweep"])
    run_dir, sweep_dir = cfg.hydra.run.dir, cfg.hydra.sweep.dir
    assert run_dir.endswith(f"_{os.getpid()}") and sweep_dir.endswith(f"_{os.getpid()}")
    assert cfg.hydra.run.dir == run_dir  # cached: one folder per command


@pytest.mark.parametrize("override", ["~hydra.callbacks.check_writes", "hydra.callbacks={}", "hydra.callbacks=null"])
def test_the_check_of_what_hydra_writes_cannot_be_taken_away(tmp_path, override):
    """The callback that checks Hydra's writes (configs/hydra/default.yaml) is not removed from the
    command line, and a root config of one's own without it does not run."""
    out = run(str(ROOT / "experiments" / "sweep.py"), override, f"hydra.run.dir={RECORD_DIR}", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert f"error: {override}: hydra.callbacks are not changed from the command line" in out.stderr
    assert not (RECORD_DIR / ".hydra").exists()


def test_a_root_config_without_the_write_check_does_not_run(tmp_path):
    (tmp_path / "bare.yaml").write_text("defaults:\n  - sweep_schema\n  - paths: default\n  - _self_\n")
    out = run(str(ROOT / "experiments" / "sweep.py"), "-cd", str(tmp_path), "-cn", "bare", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "runs without the callback retrofit.jobs.preflight.CheckWrites" in out.stderr
    assert "list `- hydra: default` in its defaults" in out.stderr


# --- no row lost without notice -----------------------------------------------------------------


def test_a_run_with_other_settings_never_replaces_rows_silently(tmp_path):
    """n_estimators=1 after n_estimators=2 into one results_dir used to replace the earlier rows."""
    first = [record("a", "baseline", 0.0, n_estimators=2), record("a", "oa_only", 1.0, n_estimators=2)]
    agg.aggregate(tmp_path, first, keep=True)
    before = (tmp_path / "retrofit_rmse.csv").read_bytes()
    other = [record("a", "baseline", 0.0, n_estimators=1), record("a", "oa_only", 5.0, n_estimators=1)]
    with pytest.raises(
        RunnerError,
        match=r"holds 2 rows this run would replace by rows of other settings, e\.g\. "
        r"h/a/seed=0/baseline \(n_estimators 2 -> 1\); write to another results_dir",
    ):
        agg.aggregate(tmp_path, other, keep=True)
    assert (tmp_path / "retrofit_rmse.csv").read_bytes() == before


@pytest.mark.slow
def test_two_sweeps_into_one_results_dir_keep_each_others_rows(host, tmp_path):
    """A sweep used to write exactly its own rows, so of two sweeps into one results_dir the last to
    finish won; a sweep now adds its rows as single runs do (the record alone is written whole)."""
    common = [*host_args(host), "variant=oa_only", f"results_dir={tmp_path / 'r'}", f"cache_dir={tmp_path / 'c'}"]
    for seed in ("0", "1"):
        out = run(str(ROOT / "experiments" / "sweep.py"), "-m", f"seed={seed}", *common, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "r" / "retrofit_rmse.csv")
    assert sorted(zip(frame.seed, frame.variant, strict=True)) == [
        (0, "baseline"),
        (0, "oa_only"),
        (1, "baseline"),
        (1, "oa_only"),
    ]


def _hold_lock(path: str, ready, release) -> None:
    from filelock import FileLock

    with FileLock(path):
        ready.set()
        release.wait(30)


def test_a_writer_waiting_on_the_results_lock_says_so_after_a_second(tmp_path, capfd):
    """A run whose results_dir another process was writing used to wait in silence for minutes."""
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path / agg.LOCK), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        timer = __import__("threading").Timer(2.5, release.set)
        timer.start()
        agg.aggregate(tmp_path, [record("a", "baseline", 0.0)], keep=True, table=False)
    finally:
        release.set()
        holder.join(30)
    said = capfd.readouterr().err
    assert f"waiting for {tmp_path / agg.LOCK}: another process is writing {tmp_path / 'retrofit_rmse.csv'}" in said
    assert len(pd.read_csv(tmp_path / "retrofit_rmse.csv")) == 1


def test_a_lock_path_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / agg.LOCK).mkdir()
    with pytest.raises(RunnerError, match=rf"{re.escape(str(tmp_path / agg.LOCK))} is a folder, and .* remove it"):
        agg.aggregate(tmp_path, [record("a", "baseline", 0.0)], keep=True)


def test_a_unit_store_that_is_a_file_is_one_line_before_any_work(host, tmp_path):
    """cache_dir/runs being a file used to end the run in a FileExistsError traceback."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "runs").write_text("not a folder")
    out = run(str(ROOT / "experiments" / "sweep.py"), *host_args(host), "cache_dir=cache", cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert f"error: cache_dir={tmp_path / 'cache' / 'runs'} is not a directory; choose another cache_dir" in out.stderr
    assert not (tmp_path / "outputs" / "results").exists()


def test_a_full_disk_leaves_the_results_of_the_last_write_whole(tmp_path, monkeypatch):
    """ENOSPC part way used to leave a new CSV beside the old plots, in a traceback; the files of a
    write now land together or not at all, and the failure is one line."""
    import errno

    agg.aggregate(tmp_path, [record("a", "baseline", 0.0), record("a", "oa_only", 1.0)], keep=True)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert {"retrofit_rmse.csv", "retrofit_deltas.png"} <= set(before)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(agg, "plot_main", full)
    with pytest.raises(
        RunnerError,
        match=rf"writing into {re.escape(str(tmp_path))} failed \(No space left on device\); "
        "none of its files changed",
    ):
        agg.aggregate(tmp_path, [record("b", "baseline", 0.0), record("b", "oa_only", 2.0)], keep=True)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staged-")]


@pytest.mark.parametrize(
    "command",
    [
        ["experiments/sweep.py", "--help"],
        ["experiments/compare.py", "results/retrofit_rmse.csv", "results/retrofit_rmse.csv"],
    ],
    ids=["help", "compare"],
)
def test_an_ascii_console_gets_what_it_can_print_not_a_traceback(command):
    """PYTHONIOENCODING=ascii used to end a command printing Δ, τ or × in a UnicodeEncodeError (after
    its results were written); such characters print as `?`."""
    out = run(str(ROOT / command[0]), *command[1:], cwd=ROOT, PYTHONIOENCODING="ascii")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stdout.isascii() and "?" in out.stdout


def test_a_variant_listed_twice_is_refused_not_dropped(hydra_compose):
    """`variant=[oa_only,oa_only]` used to run oa_only once, the repeat dropped in silence."""
    cfg = hydra_compose("sweep", ["variant=[oa_only,full_o,oa_only]"])
    with pytest.raises(RunnerError, match=r"variant=\[\.\.\.\] lists oa_only more than once; list each variant once"):
        case_from_hydra(cfg, cfg.hydra)
