"""The repository's commands run in a process of their own, as a user runs them (imported by the test
modules; pytest puts tests/ on the path)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(*args: str, cwd: Path = ROOT, timeout: int = 900, **env: str) -> subprocess.CompletedProcess:
    """`python *args` with the tests' interpreter in `cwd`, offline (`HF_HUB_OFFLINE=1`), this checkout
    first on the path, `env` added to the environment; stdout and stderr captured as text."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path, **env}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run_entry_point(script: str, *overrides: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`experiments/<script> *overrides` through `run_python`."""
    return run_python(str(ROOT / "experiments" / script), *overrides, cwd=cwd, **env)


def run_experiment(script: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    """`experiments/<script> *overrides` (`run_entry_point`, full Hydra errors, one OpenMP thread),
    which must succeed (its stderr's end otherwise)."""
    out = run_entry_point(script, *overrides, cwd=cwd, HYDRA_FULL_ERROR="1", OMP_NUM_THREADS="1")
    assert out.returncode == 0, out.stderr[-3000:]
    return out
