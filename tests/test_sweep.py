"""`experiments/sweep.py` and `experiments/aggregate.py` as a user runs them (subprocesses) on a tiny
random host: one case, a 2 × 2 sweep through joblib and submitit with a reference, refused inputs
with one clear message and no rows; the sweep's callback exits on a refusal."""

import json
import subprocess
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from processes import run_python
from test_sweep_config import write_variant

from retrofit.errors import RunnerError, exit_on_any_error
from retrofit.runner.sweep_config import BUILTIN_SEARCHPATH

ROOT = Path(__file__).resolve().parents[1]
BUILTIN_VARIANTS = ["baseline", "full_o", "o_closed", "oa_only"]
ARMS = ["paper", "presence_only", "sink_only", "identity_check"]


run = partial(run_python, HYDRA_FULL_ERROR="0")


def host_args(host: Path) -> list[str]:
    return ["host=checkpoint", f"host.path={host}", "host.name=random_v3", "n_estimators=1", "timing.rounds=0"]


def out_args(tmp_path: Path) -> list[str]:
    """Every folder the command writes, under `tmp_path` (Hydra's own too: nothing lands in the checkout)."""
    folders = [f"hydra.run.dir={tmp_path / 'run'}", f"hydra.sweep.dir={tmp_path / 'multirun'}"]
    return [f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}", *folders]


@pytest.mark.slow
def test_one_case_from_the_command_line(host, tmp_path):
    out = run("experiments/sweep.py", "dataset=hitters", "seed=1", *out_args(tmp_path), *host_args(host))
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(csv["variant"]) == BUILTIN_VARIANTS and set(csv["device"]) == {"cpu"}
    assert set(csv["n_train"] + csv["n_test"]) == {263}
    assert "dropped 59 of 322 rows without target 'Salary'" in out.stdout + out.stderr
    assert len(list((tmp_path / "cache" / "runs").glob("*.json"))) == len(BUILTIN_VARIANTS)  # one file per unit


@pytest.mark.slow
def test_a_run_without_arms_after_one_with_them_adds_its_rows_and_rewrites_the_plots(host, tmp_path):
    """docs/sweep.md's examples in order: a run with the decomposition arms, then one without into the
    same results_dir, used to end in a TypeError while plotting the arms, the new rows not written."""
    first = run(
        "experiments/sweep.py", "variant=oa_only", "+decomposition=sink_presence", *out_args(tmp_path), *host_args(host)
    )
    assert first.returncode == 0, first.stderr
    arms = pd.read_csv(tmp_path / "decomposition.csv")
    second = run("experiments/sweep.py", "dataset=carseats", "variant=oa_only", *out_args(tmp_path), *host_args(host))
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    csv = pd.read_csv(tmp_path / "retrofit_rmse.csv")
    assert sorted(csv.loc[csv["dataset"] == "carseats", "variant"]) == ["baseline", "oa_only"]  # the second run's
    assert (csv["dataset"] == "diabetes").sum() == 1 + len(arms) and list(arms["arm"].unique()) == ARMS  # the first's
    assert pd.read_csv(tmp_path / "decomposition.csv").equals(arms)
    for name in ("retrofit_deltas.png", "decomposition.png"):
        assert (tmp_path / name).stat().st_mtime_ns >= (tmp_path / "retrofit_rmse.csv").stat().st_mtime_ns


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


BAD_INPUTS = {
    "unknown-dataset": (["dataset=nope"], "Could not find 'dataset/nope'"),
    "unknown-variant": (["variant=nope"], "Could not find 'variant/nope'"),
    "unknown-variant-key": (["variant=oa_only", "+variant.colour=1"], "bad key 'colour'"),
    "unknown-host": (["host=nope"], "Could not find 'host/nope'"),
    "checkpoint-without-path": (
        ["host=checkpoint"],
        "host.path is required (configs/host/checkpoint.yaml leaves it to the command line): give host.path=",
    ),
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
    "duplicate-jobs": (["-m", "seed=0,0"], "jobs 0 and 1 of this sweep are the same job"),
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


def test_a_failing_sweep_callback_exits_nonzero_instead_of_warning(capsys):
    with pytest.raises(SystemExit) as user, exit_on_any_error():
        raise RunnerError("bad sweep")
    assert user.value.code == "error: bad sweep"
    with pytest.raises(SystemExit) as bug, exit_on_any_error():
        raise KeyError("a bug")
    assert bug.value.code == 1 and "KeyError: 'a bug'" in capsys.readouterr().err
