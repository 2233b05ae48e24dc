"""A job module, the library's (`retrofit.jobs`) or a benchmark's (`experiments`), imports only
what its schema needs (`retrofit.jobs`): importing it, and a config error answered by `launch`,
leave torch, tabpfn, sklearn, shapiq and pandas unimported. Each check runs in a fresh interpreter,
as a user's command does."""

import json

import pytest
from processes import run_python

from retrofit.jobs import declared_jobs, job_names

HEAVY = ("torch", "tabpfn", "sklearn", "shapiq", "pandas")
"""The packages a job imports only once its config has composed."""

IMPORTED = "import sys; import {module}; print(sorted(set({heavy}) & set(sys.modules)))"
"""Prints which of `HEAVY` importing the job module `module` loaded."""

LAUNCHED = """
import json, sys
from retrofit.jobs import launch
sys.argv = ["retrofit", *{overrides}]
try:
    launch({job!r})
    status = 0
except SystemExit as exit:
    status = exit.code
print(json.dumps({{"status": status, "heavy": sorted(set({heavy}) & set(sys.modules))}}))
"""
"""Runs job `job` on `overrides` in this interpreter and prints its exit status and which of `HEAVY` it loaded."""


@pytest.mark.parametrize("job", job_names())
def test_importing_a_job_imports_no_model_or_frame_library(job):
    module = declared_jobs()[job].module
    out = run_python("-c", IMPORTED.format(module=module, heavy=HEAVY))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]", f"{module} imports {out.stdout.strip()} at import time"


CONFIG_ERRORS = [(job, ["nope_key=1"], "error: nope_key is not a key of this config") for job in job_names()] + [
    ("sweep", ["n_estimator=2"], "error: n_estimator is not a key of this config (did you mean n_estimators?)"),
    ("sweep", ["n_estimators=many"], "error: Error merging override n_estimators=many"),
    ("sweep", ["dataset=no_such_dataset"], "error: In 'config': Could not find 'dataset/no_such_dataset'"),
    ("scale_check", ["rounds=x"], "error: Error merging override rounds=x"),
    (
        "scale_check",
        ["arch_overrides={tabpfn_v3: {nlayers: 2}}"],
        "error: arch_overrides.tabpfn_v3 is a new key of the mapping arch_overrides, which an override merges into, "
        "not replaces (add it with '+arch_overrides.tabpfn_v3=...', or replace the whole mapping with "
        "'++arch_overrides={tabpfn_v3: {nlayers: 2}}')",
    ),
]
"""(job, overrides, the start of the one line it answers): an unknown key for every job, a value of
the wrong type, an unknown option and a new key merged into a mapping (with the forms that work)."""


@pytest.mark.parametrize(
    ("job", "overrides", "message"), CONFIG_ERRORS, ids=[f"{job} {' '.join(o)}" for job, o, _ in CONFIG_ERRORS]
)
def test_a_config_error_is_one_line_before_any_model_is_imported(job, overrides, message, tmp_path):
    out = run_python("-c", LAUNCHED.format(job=job, overrides=overrides, heavy=HEAVY), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    ran = json.loads(out.stdout.strip().splitlines()[-1])
    assert ran["status"] in (1, 2) and ran["heavy"] == [], ran
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), out.stderr[-3000:]


DATA_MISTAKES = [
    (
        ["dataset.path=nowhere.csv", "dataset.target=price"],
        "error: dataset 'nowhere': CSV file {cwd}/nowhere.csv does not exist",
    ),
    (
        ["dataset.path=houses.csv", "dataset.target=prise"],
        "error: dataset 'houses': no target column 'prise' (did you mean 'price'?)",
    ),
    (
        ["dataset.path=houses.csv", "dataset.targt=price"],
        "error: dataset.targt is not a key of this config (did you mean dataset.target?)",
    ),
    (
        ["dataset.path=~/houses.csv", "dataset.target=price"],
        "error: dataset.path=~/houses.csv: Hydra's override grammar does not take a ~ unquoted; quote the value, "
        "'dataset.path=\"~/houses.csv\"'",
    ),
]
"""(overrides of `dataset=csv`, the one line it answers): a user's mistakes about their own CSV file."""


@pytest.mark.parametrize("job", ["sweep", "aggregate"])
@pytest.mark.parametrize(("overrides", "message"), DATA_MISTAKES, ids=["no file", "no target", "dataset key", "tilde"])
def test_a_data_mistake_is_one_line_before_any_model_is_imported(job, overrides, message, tmp_path):
    """Each answered on its own line (no progress bar has started) with torch, tabpfn, pandas and
    the rest unimported: before the seconds a model library takes to load."""
    (tmp_path / "houses.csv").write_text("rooms,area,price\n3,70,1.5\n4,90,2.0\n")
    out = run_python("-c", LAUNCHED.format(job=job, overrides=["dataset=csv", *overrides], heavy=HEAVY), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    ran = json.loads(out.stdout.strip().splitlines()[-1])
    assert ran["heavy"] == [], ran
    # a refused input exits with its line as the exit message (`exit_on_user_error`), a config error writes it
    said = out.stderr + (ran["status"] if isinstance(ran["status"], str) else "")
    lines = said.strip().splitlines()
    assert ran["status"] != 0 and len(lines) == 1 and lines[0].startswith(message.format(cwd=tmp_path)), said
