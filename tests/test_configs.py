"""The YAML folder `configs/` and the package data of `retrofit/configs/`, through Hydra's compose
API: every dataset file is a spec, the default datasets and hosts are written once, Hydra's settings
live in one group, the built-in variants ship in the package (and its wheel)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from processes import run_python

from retrofit.data import DatasetSpec
from retrofit.variants import VARIANT_DIR, available_variants

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
BUILTIN_VARIANTS = ["baseline", "full_o", "o_closed", "oa_only"]


@pytest.fixture
def benchmark_datasets(hydra_compose) -> list[str]:
    """The one list of the six default datasets (configs/benchmark/default.yaml)."""
    return hydra_compose("host_quality").benchmark_datasets.split(",")


def test_every_dataset_config_is_a_valid_spec(benchmark_datasets, hydra_compose):
    """Every dataset file (any number: adding one is adding its YAML) is a spec named by its file,
    and every dataset an experiment lists has one."""
    names = sorted(
        p.stem for p in (CONFIGS / "dataset").glob("*.yaml") if p.stem != "csv"
    )  # filled on the command line
    assert set(benchmark_datasets + list(hydra_compose("preset_selection").datasets)) <= set(names)
    for name in names:
        assert DatasetSpec.from_mapping(yaml.safe_load((CONFIGS / "dataset" / f"{name}.yaml").read_text())).name == name


def test_the_default_datasets_are_written_once_and_read_by_all(hydra_compose, benchmark_datasets):
    assert len(benchmark_datasets) == 6
    assert list(hydra_compose("host_quality").datasets) == benchmark_datasets
    assert list(hydra_compose("tau_sweep").datasets) == benchmark_datasets
    sources = [
        p for p in CONFIGS.rglob("*.yaml") if "wage,college" in p.read_text() or "wage, college" in p.read_text()
    ]
    assert sources == [CONFIGS / "benchmark" / "default.yaml"]


def test_presets_are_selected_on_datasets_disjoint_from_the_quality_bar(hydra_compose):
    bar = hydra_compose("host_quality")
    selection = hydra_compose("preset_selection")
    assert not set(bar.datasets) & set(selection.datasets) and len(selection.datasets) == 6
    assert selection.cards_dir is None and selection.results_dir != bar.results_dir
    assert "stored" not in selection.presets and len(selection.presets) >= 2


def test_hydra_settings_live_in_one_group(hydra_compose):
    for name in ("sweep", "tau_sweep", "host_quality", "audit", "pretrain_host", "sink_mass"):
        assert hydra_compose(name).hydra.job.chdir is False
    with_chdir = sorted(str(p.relative_to(CONFIGS)) for p in CONFIGS.rglob("*.yaml") if "chdir" in p.read_text())
    assert with_chdir == ["hydra/default.yaml"]


def test_builtin_variants_are_package_data():
    assert available_variants() == BUILTIN_VARIANTS
    assert VARIANT_DIR.is_relative_to(ROOT / "retrofit") and not (CONFIGS / "variant").exists()
    package_data = __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert set(package_data["retrofit.configs"]) == {"variant/*.yaml", "decomposition/*.yaml"}


def test_the_slurm_launcher_config_composes(hydra_compose):
    cfg = hydra_compose("sweep", ["hydra/launcher=slurm", "hydra.launcher.partition=p"])
    assert cfg.hydra.launcher._target_.endswith("SlurmLauncher") and cfg.hydra.launcher.partition == "p"


@pytest.mark.slow
def test_builtin_variants_work_from_an_installed_wheel(tmp_path):
    """Build the wheel, install it into a folder of its own, and resolve a built-in variant there."""
    source = tmp_path / "source"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(ROOT / "retrofit", source / "retrofit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, source],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("*.whl")
    target = tmp_path / "site"
    install = run_python("-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel))
    assert install.returncode == 0, install.stderr
    code = (
        f"import sys; sys.path.insert(0, {str(target)!r}); import retrofit.variants as v; "
        "assert v.__file__.startswith(sys.path[0]), v.__file__; "
        "print(v.available_variants(), v.resolve_variant('oa_only').eps_den)"
    )
    out = run_python("-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{BUILTIN_VARIANTS} 1e-06"
