"""What holds for every experiment module (`experiments/<name>.py`, the jobs `retrofit.jobs.launch`
starts): importing it imports no model or frame library; its root config composes over its schema,
stored in Hydra's ConfigStore, so an unknown key is one line before any model is imported and a key
added with `+` is refused before any work; `--help` is answered from the root config, importing no
model; its entry point imports its own job and no other. Each command runs in a fresh interpreter,
as a user's command does."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from processes import ROOT, run_entry_point, run_python

from retrofit.errors import RunnerError
from retrofit.jobs import job_configs, job_module, job_names
from retrofit.runner import job_config

HEAVY = ("torch", "tabpfn", "sklearn", "shapiq", "pandas")
"""The packages a job imports only once its config has composed."""
ROOT_CONFIGS = sorted(path.stem for path in (ROOT / "configs").glob("*.yaml"))
MODULES = {job: job_module(job).__name__ for job in job_names()}
"""Job -> its module's name (importing each is cheap: what the tests below check in a fresh interpreter)."""

LAUNCHED = """
import json, sys
import {module}
imported = sorted(set({heavy}) & set(sys.modules))
from retrofit.jobs import launch
sys.argv = ["retrofit", *{overrides}]
try:
    launch({job!r})
    status = 0
except SystemExit as exit:
    status = exit.code
print(json.dumps({{"status": status, "imported": imported, "heavy": sorted(set({heavy}) & set(sys.modules))}}))
"""
"""Imports job `job`'s module, then runs the job on `overrides` in this interpreter; prints its exit
status and which of `HEAVY` the import loaded and the run had loaded."""


def launched(job: str, overrides: list[str], cwd: Path) -> tuple[dict, str, str]:
    """Job `job` run on `overrides` in a fresh interpreter (`LAUNCHED`): its last line read, its stdout, its stderr."""
    out = run_python("-c", LAUNCHED.format(module=MODULES[job], job=job, overrides=overrides, heavy=HEAVY), cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stdout, out.stderr


@pytest.mark.parametrize("job", job_names())
def test_an_unknown_key_is_one_line_and_importing_the_job_imports_no_model(job, tmp_path):
    ran, _, stderr = launched(job, ["nope_key=1"], tmp_path)
    assert ran["imported"] == [], f"{MODULES[job]} imports {ran['imported']} at import time"
    assert ran["status"] == 1 and ran["heavy"] == [], ran
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: nope_key is not a key of this config"), stderr[-3000:]


@pytest.mark.parametrize("job", job_names())
def test_help_is_answered_from_the_root_config_importing_no_model(job, tmp_path):
    ran, stdout, stderr = launched(job, ["--help"], tmp_path)
    assert ran["status"] == 0 and ran["heavy"] == [], stderr[-3000:]
    assert "$CONFIG" not in stdout and ("== Config ==" in stdout or "Override anything" in stdout), stdout


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
    (
        ["dataset.path=houses.csv", "dataset.target=sale price!"],
        "error: dataset.target=sale price!: Hydra's override grammar does not take a character unquoted; quote the "
        "value, 'dataset.target=\"sale price!\"'",
    ),
]
"""(overrides of `dataset=csv`, the one line it answers): a user's mistakes about their own CSV file."""


@pytest.mark.parametrize("job", ["sweep", "aggregate", "explain", "noise_floor"])  # a `dataset` node (`job_start`)
@pytest.mark.parametrize(
    ("overrides", "message"), DATA_MISTAKES, ids=["no file", "no target", "dataset key", "tilde", "space"]
)
def test_a_data_mistake_is_one_line_before_any_model_is_imported(job, overrides, message, tmp_path):
    """Each answered on its own line (no progress bar has started) with torch, tabpfn, pandas and
    the rest unimported: before the seconds a model library takes to load."""
    (tmp_path / "houses.csv").write_text("rooms,area,price\n3,70,1.5\n4,90,2.0\n")
    ran, _, stderr = launched(job, ["dataset=csv", *overrides], tmp_path)
    assert ran["heavy"] == [], ran
    # a refused input exits with its line as the exit message (`exit_on_user_error`), a config error writes it
    said = stderr + (ran["status"] if isinstance(ran["status"], str) else "")
    lines = said.strip().splitlines()
    assert ran["status"] != 0 and len(lines) == 1 and lines[0].startswith(message.format(cwd=tmp_path)), said


@pytest.mark.parametrize("name", ROOT_CONFIGS)
def test_every_root_config_composes_and_resolves(hydra_compose, name):
    cfg = hydra_compose(name)
    job = {key: value for key, value in cfg.items() if key != "hydra"}  # Hydra resolves its own node at run time
    assert OmegaConf.to_container(OmegaConf.create(job), resolve=True, throw_on_missing=True)


@pytest.mark.parametrize("name", ROOT_CONFIGS)
def test_a_misspelt_key_in_a_root_config_fails_at_composition_naming_it(job_schemas, name, tmp_path):
    """The root config's schema, stored by `job_schemas`, refuses the key (unstored, composition would
    fail on the missing schema and name no key)."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    with (tmp_path / "configs" / f"{name}.yaml").open("a") as file:
        file.write("\nn_estimatorz: 4\n")
    GlobalHydra.instance().clear()
    try:
        with (
            initialize_config_dir(config_dir=str(tmp_path / "configs"), version_base="1.3"),
            pytest.raises(ConfigCompositionException) as refused,
        ):
            compose(name, [])
    finally:
        GlobalHydra.instance().clear()
    assert "n_estimatorz" in f"{refused.value} {refused.value.__cause__}"


@pytest.mark.parametrize("name", ROOT_CONFIGS)
def test_a_key_added_on_the_command_line_is_refused_before_any_work(hydra_compose, name):
    """The composed config is typed by the schema of the job whose root config it is (stored by
    `retrofit.jobs.register`); `preset_selection` extends `host_quality`'s."""
    cfg = hydra_compose(name, ["+n_estimatorz=4"])
    schema = OmegaConf.get_type(cfg)
    assert schema is job_module(job_configs()[name.replace("preset_selection", "host_quality")]).SCHEMA
    with pytest.raises(RunnerError, match=r"bad key 'n_estimatorz'"):
        job_config(cfg, schema, name)
    with pytest.raises(ConfigCompositionException, match=r"n_estimatorz"):
        hydra_compose(name, ["n_estimatorz=4"])


IMPORTS_OF_AN_ENTRY_POINT = """
import runpy, sys
sys.argv = [sys.argv[1], sys.argv[2]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
jobs = ("retrofit.jobs.", "experiments.")
print(*sorted(m for m in sys.modules if m in ("torch", "tabpfn", "shapiq") or m.startswith(jobs)))
"""


@pytest.mark.parametrize("job", ["audit", "tau_sweep"])
def test_an_entry_point_imports_its_own_job_and_no_other(job):
    """Each entry point registers only its own root config's schema (`retrofit.jobs.register`), so
    it imports no other job's module; its job imports the models only in `run`, so a refused config
    imports neither torch nor tabpfn (nor shapiq, which only the removal explanations use)."""
    out = run_python("-c", IMPORTS_OF_AN_ENTRY_POINT, str(ROOT / "experiments" / f"{job}.py"), "not_a_key=1")
    assert out.returncode == 0, out.stderr[-3000:]
    modules = ["compose", "exits", "instantiated", "launchers", "preflight", "sources", "start"]
    imported = [f"experiments.{job}", *(f"retrofit.jobs.{name}" for name in modules)]
    assert out.stdout.splitlines()[-1].split() == imported  # composed (and refused) after its job was imported


def test_diff_runs_as_a_job_and_from_its_entry_point_with_two_bare_paths(tmp_path):
    record = ROOT / "results" / "retrofit_rmse.csv"
    as_job = run_python("-m", "retrofit", "diff", f"a={record}", f"b={record}", cwd=tmp_path)
    bare = run_entry_point("diff.py", str(record), str(record), cwd=tmp_path)
    assert as_job.returncode == bare.returncode == 0, as_job.stderr[-3000:] + bare.stderr[-3000:]
    assert as_job.stdout == bare.stdout and f"A = {record}" in as_job.stdout and "rmse" in as_job.stdout
    missing = run_python("-m", "retrofit", "diff", f"a={tmp_path / 'none.csv'}", f"b={record}", cwd=tmp_path)
    lines = missing.stderr.strip().splitlines()
    assert missing.returncode == 1 and len(lines) == 1 and "none.csv does not exist" in lines[0], missing.stderr


def test_the_former_name_compare_runs_diff_after_one_line_giving_the_new_name(tmp_path):
    """`retrofit compare`, `experiments/compare.py` and `make compare` (the diff's former name, now
    `retrofit.compare`'s) print what `diff` prints, after one line on stderr naming `diff`."""
    from experiments.compare import RENAMED

    record = ROOT / "results" / "retrofit_rmse.csv"
    new = run_python("-m", "retrofit", "diff", f"a={record}", f"b={record}", cwd=tmp_path)
    old = [
        run_python("-m", "retrofit", "compare", f"a={record}", f"b={record}", cwd=tmp_path),
        run_entry_point("compare.py", str(record), str(record), cwd=tmp_path),
    ]
    if shutil.which("make"):
        make = ["make", "-s", "-C", str(ROOT), "-o", ".venv/.installed", "compare", f"A={record}", f"B={record}"]
        old.append(subprocess.run(make, cwd=tmp_path, capture_output=True, text=True, timeout=120))
    assert new.returncode == 0 and "diff" in RENAMED and RENAMED not in new.stderr, new.stderr[-3000:]
    for out in old:
        assert out.returncode == 0 and out.stdout == new.stdout, out.stderr[-3000:]
        assert out.stderr.count(RENAMED) == 1, out.stderr[-3000:]
