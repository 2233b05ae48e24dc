"""The unit store (`retrofit.runner.store`): unit files named by identity, read back verified (a tampered
file is named and recomputed, never served), atomic and concurrent writes, and a run's units read
back by its cases' identities (`retrofit.runner.finish`: a unit without a result named, nothing written)."""

import json
import logging
import shutil
import subprocess
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path
from subprocess import PIPE

import pandas as pd
import pytest
from processes import host_args, run_hydra

from retrofit.errors import RunnerError
from retrofit.io import write_atomic
from retrofit.runner import identity
from retrofit.runner.case import UnitSpec, run_case
from retrofit.runner.finish import stored_rows, sweep_records
from retrofit.runner.store import UnitStore, row_digest

ROOT = Path(__file__).resolve().parents[1]


WORKER = Path(__file__).with_name("case_worker.py")
"""Runs cases into one store in a process of its own."""


def test_store_reads_back_a_unit_only_under_its_identity(tmp_path):
    store = UnitStore(tmp_path, columns=("rmse",))
    path = store.write("abc", {"rmse": 1.0})
    assert path == tmp_path / "abc.json" and store.finished("abc")["rmse"] == 1.0
    assert store.finished("changed") is None
    path.rename(tmp_path / "other.json")  # a file under another identity's name is not that unit
    assert store.finished("other") is None


def test_atomic_write_leaves_nothing_when_interrupted(tmp_path):
    def crash(tmp):
        tmp.write_text("half a row")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "unit.json", crash)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_unit_file_is_named(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RunnerError, match=r"bad\.json is not valid JSON"):
        UnitStore(tmp_path).read(tmp_path / "bad.json")


@pytest.fixture(scope="module")
def case_on(make_case):
    """`make_case` with this file's defaults: diabetes, baseline and oa_only, one member."""
    return partial(make_case, units=(UnitSpec("baseline"), UnitSpec("oa_only")), n_estimators=1)


@pytest.mark.slow
def test_two_concurrent_sweeps_on_one_store_lose_nothing(host, tmp_path):
    """Two processes run overlapping cases into one store at once: every unit ends up whole, once."""
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), str(host), str(tmp_path), datasets, "0", "1"], stderr=PIPE)
        for datasets in ("diabetes,carseats", "carseats,diabetes")
    ]
    errors = [p.communicate(timeout=600)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    store = UnitStore(tmp_path)
    rows = [store.read(path) for path in tmp_path.rglob("*.json")]
    assert sorted((r["dataset"], r["variant"]) for r in rows) == [
        ("carseats", "baseline"),
        ("carseats", "oa_only"),
        ("diabetes", "baseline"),
        ("diabetes", "oa_only"),
    ]
    assert not list(tmp_path.rglob("*.tmp"))


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


@pytest.mark.slow
def test_aggregating_a_mistyped_cache_writes_nothing_and_says_why(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "retrofit_rmse.csv").write_text("dataset,rmse\nwage,1.0\n")
    out = run_hydra(
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
    out = run_hydra(str(ROOT / "experiments" / "sweep.py"), *sweep, f"results_dir={tmp_path / 'a'}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "cache" / "runs").glob("*.json"))) == 4

    def aggregate(*args: str, results: str = "b") -> subprocess.CompletedProcess:
        command = [str(ROOT / "experiments" / "aggregate.py"), *sweep, *args, f"results_dir={tmp_path / results}"]
        return run_hydra(*command, cwd=tmp_path)

    out = aggregate()
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "b" / "retrofit_rmse.csv").read_bytes() == (tmp_path / "a" / "retrofit_rmse.csv").read_bytes()
    single = [arg for arg in sweep if arg not in ("-m", "seed=0,1")]  # one job of the sweep, as a single run
    out = run_hydra(
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
        run_hydra(
            str(ROOT / "experiments" / "sweep.py"), *sweep, f"results_dir={tmp_path / 'a'}", cwd=tmp_path
        ).returncode
        == 0
    )
    with changed.open("ab") as file:
        file.write(b" ")  # the host file changes after the sweep: named, never served
    out = aggregate(results="c")
    assert out.returncode == 1 and str(changed) in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "c").exists()


def test_a_runs_records_are_read_by_the_identities_its_cases_computed(host, tmp_path, monkeypatch, case_on):
    """The finish reads the units its cases named when they were built (the sweep's check), never
    rebuilding them: a code digest that changed since is not seen, a case built now (another
    identity) has no stored result and is named."""
    case = case_on(host, tmp_path)
    rows = run_case(case)
    monkeypatch.setattr(identity, "code_digest", lambda: "changed since")
    assert [r.rmse for r in sweep_records([case])] == [r["rmse"] for r in rows]
    with pytest.raises(RunnerError, match="2 units of this run have no result in"):
        sweep_records([replace(case)])
