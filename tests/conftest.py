"""Shared test setup: tests never touch the network."""

import os

# Set before tabpfn/huggingface_hub are imported by any test module: a hub lookup must
# fail at once instead of hanging on the closed network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TABPFN_DISABLE_TELEMETRY", "1")


from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest


def pytest_configure(config):
    """Under pytest-xdist (`make test` runs `-n 2`), each worker gets its share of the CPU threads
    torch would take alone (at least one): its own torch and, through OMP_NUM_THREADS, every command
    a test starts. Two workers each spinning OpenMP threads over all the cores made the in-process
    forwards several times slower. A serial run (no worker) keeps torch's defaults."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if "PYTEST_XDIST_WORKER" not in os.environ or workers == 1:
        return
    import torch

    share = max(1, torch.get_num_threads() // workers)
    torch.set_num_threads(share)
    os.environ["OMP_NUM_THREADS"] = str(share)


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` are skipped, with the reason, where torch sees no CUDA device."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA device; torch {torch.__version__} sees none")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


BUILT: dict[tuple, object] = {}
"""What this pytest run built once and every test shares: (what, *its arguments) -> it."""


def built_once(key: tuple, make: Callable[[], object]) -> object:
    """`make()`, called on the first use of `key` in this pytest run and kept for every later one."""
    if key not in BUILT:
        BUILT[key] = make()
    return BUILT[key]


def _random_host(tmp_path_factory, arch_name: str, seed: int = 0) -> Path:
    """The tiny random host checkpoint of (`arch_name`, `seed`), written on first use in this run."""
    from retrofit.hosts.random_host import random_host

    def write() -> Path:
        return random_host(arch_name, tmp_path_factory.mktemp(f"host_{arch_name}"), seed)

    return built_once(("random_host", arch_name, seed), write)


@pytest.fixture(scope="module")
def make_random_host(tmp_path_factory):
    """Factory `make_random_host(arch_name, seed=0) -> Path` of a tiny random host checkpoint
    (`retrofit.hosts.random_host`; each written once per pytest run; loads in `TabPFNRegressor`)."""
    return lambda arch_name, seed=0: _random_host(tmp_path_factory, arch_name, seed)


@pytest.fixture(scope="module")
def host(make_random_host):
    """The tiny random tabpfn_v3 host most runner and removal tests run (a file may define its own)."""
    return make_random_host("tabpfn_v3")


@pytest.fixture(scope="module")
def removal_case(tmp_path_factory):
    """(regressor, X_train, y_train, X_test, y_test): `synthetic.closed_fit` of the random tabpfn_v3
    host on `synthetic.removal_table()`, fitted once for the whole run (`built_once`) and shared by
    the removal tests (values, row values and Shapley values read it; none changes it)."""
    from synthetic import closed_fit, removal_table

    def fit() -> tuple:
        X_train, y_train, X_test, y_test = removal_table()
        host = _random_host(tmp_path_factory, "tabpfn_v3")
        return closed_fit(host, X_train, y_train), X_train, y_train, X_test, y_test

    return built_once(("removal_case",), fit)


@pytest.fixture(scope="module")
def fitted(make_random_host):
    """Factory `fitted(arch, **overrides) -> (regressor, X_test)`: `synthetic.fit_synthetic` on a tiny
    random host of `arch` (n=80), fitted once per module and overrides."""
    from synthetic import fit_synthetic

    cache = {}

    def make(arch: str, **overrides):
        key = (arch, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = fit_synthetic(make_random_host(arch), n=80, **overrides)
        return cache[key]

    return make


@pytest.fixture(scope="module")
def tiny_v3_fitted():
    """(the shipped tiny_v3 host fitted with one member, random_state 0, on the first 40 rows of
    `synthetic.small_regression_data()`, its other 20 rows' features, their targets). Fitted once for
    the whole run (`built_once`): `retrofit.retrofit` copies what it patches, so no test changes it."""
    from synthetic import small_regression_data

    from retrofit.hosts import get_path, make_regressor

    def fit() -> tuple:
        X, y = small_regression_data()
        regressor = make_regressor(get_path("tiny_v3"), n_estimators=1, random_state=0).fit(X[:40], y[:40])
        return regressor, X[40:], y[40:]

    return built_once(("tiny_v3_fitted",), fit)


@pytest.fixture
def job_schemas() -> None:
    """Every root config's schema stored in Hydra's ConfigStore (`retrofit.jobs.register`), once per
    run (`built_once`): the store outlives `GlobalHydra.clear()`, and no test stores another schema
    in-process."""
    from retrofit.jobs import register

    built_once(("job_schemas",), register)


@pytest.fixture
def hydra_compose(job_schemas):
    """`hydra_compose(config_name="sweep", overrides=())`: that root config of the repository's
    `configs/` composed (every root config's schema stored, `job_schemas`), its `hydra` node kept;
    Hydra is cleared before and after."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[1] / "configs"), version_base="1.3"):
        yield lambda name="sweep", overrides=(): compose(name, list(overrides), return_hydra_config=True)
    GlobalHydra.instance().clear()


@pytest.fixture(scope="module")
def dataset_spec():
    """`dataset_spec(name) -> DatasetSpec` of the repository's `configs/dataset/<name>.yaml`."""
    import yaml

    from retrofit.data import DatasetSpec

    folder = Path(__file__).resolve().parents[1] / "configs" / "dataset"
    return lambda name: DatasetSpec.from_mapping(yaml.safe_load((folder / f"{name}.yaml").read_text()))


@pytest.fixture(scope="module")
def make_case(dataset_spec):
    """`make_case(host_path, runs_dir, dataset="diabetes", seed=0, *, host="random_v3", units=(), **fields)`:
    a runner `Case` on a repository dataset config (`dataset` names it, or is a `DatasetSpec`), files
    relative to the working directory; `fields` are the other `Case` fields (`n_estimators`, ...)."""
    from retrofit.data import DatasetSpec
    from retrofit.runner.case import Case

    def make(host_path, runs_dir, dataset="diabetes", seed=0, *, host="random_v3", units=(), **fields):
        spec = dataset if isinstance(dataset, DatasetSpec) else dataset_spec(dataset)
        return Case(
            spec, seed, Path(host_path), Path("."), host=host, units=tuple(units), runs_dir=Path(runs_dir), **fields
        )

    return make


@pytest.fixture(scope="module")
def diabetes_case(make_case):
    """`make_case` on diabetes with baseline and oa_only, one member."""
    from retrofit.runner.case import UnitSpec

    return partial(make_case, units=(UnitSpec("baseline"), UnitSpec("oa_only")), n_estimators=1)


@pytest.fixture
def case_on(make_case):
    """`make_case` on carseats with the units `synthetic.CASE_VARIANTS`, one member."""
    from synthetic import CASE_VARIANTS

    from retrofit.runner.case import UnitSpec

    return partial(make_case, dataset="carseats", units=tuple(UnitSpec(v) for v in CASE_VARIANTS), n_estimators=1)


@pytest.fixture(scope="module")
def finished(make_random_host, make_case, tmp_path_factory):
    """A finished case's unit store and its rows: a random tabpfn_v3 host on diabetes, seed 0, the
    units baseline and oa_only, one member (`retrofit.runner.case.run_case`)."""
    from retrofit.runner.case import UnitSpec, run_case

    runs = tmp_path_factory.mktemp("finished")
    units = (UnitSpec("baseline"), UnitSpec("oa_only"))
    return runs, run_case(make_case(make_random_host("tabpfn_v3"), runs, units=units, n_estimators=1))
