"""`gpu/pretrain.sh`: the GPU node's pretraining script, run here on the CPU (DEVICE=cpu) with no
training minutes: each run of RUNS exports a loadable host of its own seed into $OUT, with its curve
and a steps.csv row, and nothing of its resumable state comes back."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from synthetic import fit_synthetic

REPO = Path(__file__).resolve().parents[1]


def test_the_script_exports_each_runs_host_and_curve(tmp_path):
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "DEVICE": "cpu",
        "MINUTES": "0",
        "RUNS": "v2_a=tiny_v2:1 v2_b=tiny_v2:2",
        "PYTHON": sys.executable,
    }
    done = subprocess.run(["bash", "gpu/pretrain.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = (out / "steps.csv").read_text().splitlines()
    assert rows[0] == "run,wall_s,status" and sorted(r.split(",")[0] for r in rows[1:]) == ["v2_a", "v2_b"]
    assert all(r.endswith(",0") for r in rows[1:])
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".pt") == []
    weights = {}
    for name in ("v2_a", "v2_b"):
        curve = [json.loads(line) for line in (out / f"{name}.log.jsonl").read_text().splitlines()]
        assert curve[0]["step"] == 0 and np.isfinite(curve[0]["small_nll"])
        with safe_open(str(out / f"{name}.safetensors"), framework="pt") as fh:
            assert json.loads(fh.metadata()["host_card"])["host"] == name
            weights[name] = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118 (safe_open is not iterable)
        regressor, X_test = fit_synthetic(out / f"{name}.safetensors", n=60, n_train=40, f=3)
        assert np.isfinite(regressor.predict(X_test)).all()
    # Another seed is another host: the initial weights differ.
    differing = [k for k in weights["v2_a"] if not torch.equal(weights["v2_a"][k], weights["v2_b"][k])]
    assert len(differing) > len(weights["v2_a"]) // 2


def _interpreter(**env: str) -> subprocess.CompletedProcess:
    """`gpu/interpreter.sh` sourced from the repository root as the GPU scripts source it, `$PY` printed."""
    clean = {key: value for key, value in os.environ.items() if key != "PYTHON"}
    return subprocess.run(
        ["bash", "-c", '. gpu/interpreter.sh && echo "$PY"'], cwd=REPO, env=clean | env, capture_output=True, text=True
    )


def test_the_gpu_scripts_run_the_venvs_python_or_the_one_named_and_refuse_none_in_one_line():
    """As every documented command, the GPU scripts run `.venv/bin/python` (which `make install`
    makes); `PYTHON` names another; an interpreter that is not there is refused in one line naming the fixes."""
    assert _interpreter().stdout == ".venv/bin/python\n" and (REPO / ".venv/bin/python").exists()
    assert _interpreter(PYTHON=sys.executable).stdout == f"{sys.executable}\n"
    missing = _interpreter(PYTHON="/nope/python")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("error: no interpreter /nope/python (run `make install`")
    for script in ("gpu/check.sh", "gpu/pretrain.sh"):
        head = (REPO / script).read_text().split("\nset -u")[0]
        assert "OUT=/some/folder" in head and ".venv/bin/python" in head and "PYTHON=python3" in head, script
