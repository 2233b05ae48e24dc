"""Every root config composes, and every entry point runs end to end on tiny settings.

Each run is a subprocess started in a temporary directory (Hydra's own logs land there), writing
its tables there too; a run checks the file it writes, not only its exit status. The sweep, the
aggregation, the audit, the sink mass and the attention benchmark are run by their own test files.
"""

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from processes import run_entry_point, run_python

from retrofit.errors import RunnerError
from retrofit.hosts import check_checkpoint
from retrofit.hosts.random_host import TINY_ARCHS
from retrofit.jobs import schema_of
from retrofit.runner.schema import job_config

ROOT = Path(__file__).resolve().parents[1]
ROOT_CONFIGS = sorted(path.stem for path in (ROOT / "configs").glob("*.yaml"))


def run(script: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    """`experiments/<script>`, which must succeed (its stderr's end otherwise)."""
    out = run_entry_point(script, *overrides, cwd=cwd, HYDRA_FULL_ERROR="1", OMP_NUM_THREADS="1")
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", ROOT_CONFIGS)
def test_every_root_config_composes_and_resolves(hydra_compose, name):
    cfg = hydra_compose(name)
    job = {key: value for key, value in cfg.items() if key != "hydra"}  # Hydra resolves its own node at run time
    assert OmegaConf.to_container(OmegaConf.create(job), resolve=True, throw_on_missing=True)


@pytest.mark.parametrize("name", ROOT_CONFIGS)
def test_a_misspelt_key_in_a_root_config_fails_at_composition_naming_it(name, tmp_path):
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
    cfg = hydra_compose(name, ["+n_estimatorz=4"])
    schema = OmegaConf.get_type(cfg)
    assert schema is schema_of(name.replace("preset_selection", "host_quality"))
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


@pytest.mark.parametrize(
    "script, imported",
    [
        (
            "exactness.py",
            ["experiments.exactness", "retrofit.jobs.exits", "retrofit.jobs.preflight", "retrofit.jobs.start"],
        ),
        ("audit.py", ["retrofit.jobs.audit", "retrofit.jobs.exits", "retrofit.jobs.preflight", "retrofit.jobs.start"]),
    ],
)
def test_an_entry_point_imports_its_own_job_and_no_other(script, imported):
    """Each entry point registers only its own root config's schema (`retrofit.jobs.register`), so
    it imports no other job's module; its job imports the models only in `run`, so a refused config
    imports neither torch nor tabpfn (nor shapiq, which only the removal explanations use)."""
    out = run_python("-c", IMPORTS_OF_AN_ENTRY_POINT, str(ROOT / "experiments" / script), "not_a_key=1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1].split() == imported  # composed (and refused) after its job was imported


def test_help_imports_no_job_and_no_model():
    """`--help` is answered from the root config alone: no job module, torch or tabpfn is imported."""
    out = run_python("-c", IMPORTS_OF_AN_ENTRY_POINT, str(ROOT / "experiments" / "sweep.py"), "--help")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "== Configuration groups ==" in out.stdout
    assert out.stdout.splitlines()[-1].split() == ["retrofit.jobs.exits"]


def test_ablation_writes_its_table_and_the_otransformer_holds_the_old_tokens(tmp_path):
    csv, md = tmp_path / "ablation.csv", tmp_path / "ablation.md"
    tiny = ["d_model=16", "n_heads=2", "d_ffn=32", "n_old=8", "n_nulls=[2]", "batch=1"]
    run("ablation.py", *tiny, f"output_csv={csv}", f"output_md={md}", cwd=tmp_path)
    assert [log.name for log in (tmp_path / "outputs").rglob("*.log")] == ["ablation.log"]  # Hydra's job name
    table = pd.read_csv(csv)
    assert set(table.host) == {"standard", "oa_only", "otransformer"} and set(table.n_null) == {2}
    assert (table[table.host == "otransformer"].linf_old_tokens == 0).all()
    assert (table[table.host == "standard"].linf_old_tokens > 0).any()
    assert "| otransformer |" in md.read_text()


def test_exactness_writes_null_receivers_that_stay_zero(tmp_path):
    csv = tmp_path / "exactness.csv"
    run(
        "exactness.py",
        "shapes=[{B: 1, H: 2, Q: 16, K: 12, D: 8}]",
        "score_stds=[1.0]",
        f"output_csv={csv}",
        cwd=tmp_path,
    )
    table = pd.read_csv(csv)
    assert len(table) == 3 * 2 * 3 and (table.null_receiver_max_abs == 0).all()  # implementations x eps_mode x dtypes
    assert set(table.eps_mode) == {"absolute", "relative"}
    assert (table[table.implementation == "compact"].null_insertion_linf_abs == 0).all()


@pytest.mark.slow
def test_padding_demo_shows_o_closed_ignores_the_padding(tmp_path):
    csv = tmp_path / "padding.csv"
    settings = ["seeds=[0]", "datasets=[diabetes,hitters]", "n_estimators=1", "max_padding=10"]  # one padded bucket
    run("padding_demo.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv).set_index(["variant", "dataset"])
    assert set(table.index) == {(v, d) for v in ("baseline", "o_closed") for d in ("diabetes", "hitters")}
    assert (table.loc["o_closed", "rel_delta_pred"] <= 1e-5).all()
    assert (table.loc["baseline", "rel_delta_pred"] > 1e-3).any()


@pytest.mark.slow
def test_bench_batch_writes_paired_rounds(tmp_path):
    csv = tmp_path / "bench.csv"
    settings = ["seeds=[0]", "datasets=[diabetes,hitters]", "n_estimators=1", "rounds=2", "threads=1"]
    out = run("bench_batch.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv)
    assert len(table) == 2 and (table.speedup > 0).all()
    assert "predict_many speed-up over sequential predict" in out.stdout


@pytest.mark.slow
def test_host_quality_scores_a_host_against_the_baselines(tmp_path):
    settings = ["hosts=[tiny_v3]", "datasets=[diabetes]", "seeds=[0]", "n_estimators=1", "cards_dir=null"]
    run("host_quality.py", *settings, f"results_dir={tmp_path}", cwd=tmp_path)
    scores = pd.read_csv(tmp_path / "host_quality.csv")
    assert set(scores.model) == {"mean", "ridge", "random_forest", "tiny_v3[stored]"}
    summary = pd.read_csv(tmp_path / "host_quality_summary.csv").set_index("model")
    assert summary.loc["mean", "worst_rmse_over_mean"] == 1.0
    assert set(pd.read_csv(tmp_path / "host_extrapolation.csv").model) == {"tiny_v3[stored]"}


@pytest.mark.slow
def test_preset_selection_scores_every_preset(tmp_path):
    settings = ["hosts=[tiny_v2]", "datasets=[cpus]", "seeds=[0]", "presets=[stored,lean]", "n_estimators=1"]
    run("host_quality.py", "--config-name", "preset_selection", *settings, f"results_dir={tmp_path}", cwd=tmp_path)
    assert set(pd.read_csv(tmp_path / "host_quality.csv").model) >= {"tiny_v2[stored]", "tiny_v2[lean]"}


@pytest.mark.slow
def test_tau_sweep_writes_a_row_per_variant_and_c(tmp_path):
    settings = ["host=tiny_v2", "datasets=[diabetes]", "c_values=[0.001,0.1]", "variants=[oa_only]", "n_estimators=1"]
    run("tau_sweep.py", *settings, f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}", cwd=tmp_path)
    table = pd.read_csv(tmp_path / "tau_sweep.csv")
    assert sorted(table.c) == [0.001, 0.1] and set(table.variant) == {"oa_only"}


@pytest.mark.slow
def test_pretrain_host_writes_a_checkpoint_that_loads(tmp_path):
    settings = ["pretrain=tiny_v2", "pretrain.export_path=null", "pretrain.max_steps=2", "pretrain.border_samples=2000"]
    settings += ["pretrain.val.small.n_batches=1", "pretrain.val.large.n_batches=1"]
    settings += ["pretrain.arch.emsize=32", "pretrain.arch.nlayers=1"]
    run("pretrain_host.py", *settings, f"pretrain.run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert check_checkpoint(tmp_path / "run" / "host.safetensors").is_file()


@pytest.mark.slow
def test_scale_check_measures_a_tiny_architecture(tmp_path):
    csv = tmp_path / "scale.csv"
    arch = ", ".join(f"{key}: {value}" for key, value in TINY_ARCHS["tabpfn_v2"].items() if key != "max_num_classes")
    settings = [
        "archs=[tabpfn_v2]",
        "variants=[full_o]",
        f"++arch_overrides={{tabpfn_v2: {{{arch}}}}}",
        "n_train=60",
        "n_test=10",
        "n_features=3",
        "rounds=1",
        "audit_n_train=30",
        "audit_n_test=5",
        "tables=[[30,5,3],[40,6,2]]",
        "threads=1",
    ]
    run("scale_check.py", *settings, f"output={csv}", cwd=tmp_path)
    table = pd.read_csv(csv).set_index("variant")
    assert table.loc["baseline", "status"] == "measured" and table.loc["full_o", "status"] == "measured"
