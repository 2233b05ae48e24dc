"""From a composed sweep config to its `Case` (`retrofit.runner.config`): the default case, the
variants a case runs and their hyper-parameters, refusals naming the key, variants and datasets on a
search path, relative paths, the paper table's grid and Hydra's sweep expansion."""

from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import open_dict

from retrofit.data import DatasetError
from retrofit.errors import RunnerError
from retrofit.hosts import available
from retrofit.runner.case import check_cases
from retrofit.runner.config import BUILTIN_SEARCHPATH, case_from_hydra, sweep_jobs
from retrofit.variants import resolve_variant

ROOT = Path(__file__).resolve().parents[1]
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
