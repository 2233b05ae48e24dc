"""Host checkpoints: save -> load -> predict round trips, offline validation, clear errors."""

import hashlib
import os
import pathlib
import time
from functools import partial

import numpy as np
import pytest
import torch
import yaml
from processes import run_python
from safetensors import safe_open
from synthetic import diabetes_split, regression_data
from tabpfn.checkpoint import Checkpoint
from tabpfn.constants import ModelVersion
from tabpfn.model_loading import resolve_model_version
from tabpfn.settings import settings

from retrofit.adapters import ARCHITECTURES
from retrofit.errors import RetrofitError
from retrofit.hosts import SHIPPED_HOSTS, available, check_checkpoint, get_path, make_regressor, shipped
from retrofit.hosts.random_host import TINY_ARCHS, VERSION_TAG
from retrofit.hosts.validation import architecture_name
from retrofit.metrics import rmse
from retrofit.runner.config import case_from_hydra
from retrofit.runner.store import file_digest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_data = partial(regression_data, n=120, curved=False)


def _pretrain_config(name: str) -> dict:
    """`configs/pretrain/<name>.yaml` as written (the recipe a shipped host is trained and exported by)."""
    return yaml.safe_load((ROOT / "configs" / "pretrain" / f"{name}.yaml").read_text())


@pytest.mark.parametrize(
    "arch_name",
    [
        pytest.param(a, marks=pytest.mark.skipif(a not in ARCHITECTURES, reason=f"{a} has no adapter spec yet"))
        for a in sorted(TINY_ARCHS)
    ],
)
def test_saved_host_loads_through_tabpfn_and_predicts(make_random_host, arch_name):
    path = make_random_host(arch_name)
    X, y = _data()
    reg = make_regressor(path, n_estimators=2, random_state=0).fit(X[:80], y[:80])
    pred = reg.predict(X[80:])
    assert pred.shape == (40,) and np.isfinite(pred).all()
    # Same file, same seed: the prediction is reproducible bit for bit.
    again = make_regressor(path, n_estimators=2, random_state=0).fit(X[:80], y[:80]).predict(X[80:])
    np.testing.assert_array_equal(pred, again)


@pytest.mark.parametrize("arch_name", ["tabpfn_v2", "tabpfn_v3"])
def test_saved_weights_round_trip_exactly(make_random_host, arch_name):
    path = make_random_host(arch_name)
    reg = make_regressor(path, n_estimators=1).fit(*_data())
    loaded = reg.models_[0].state_dict()
    with safe_open(str(path), framework="pt") as fh:
        for key in loaded:
            assert torch.equal(loaded[key], fh.get_tensor(key)), key
        header = fh.metadata()
    assert set(header) >= {"config", "architecture_name", "inference_config"}


@pytest.mark.parametrize("name", available())
def test_shipped_file_is_pure_safetensors_with_a_tabpfn_header(name):
    """The whole file parses as safetensors (tensors + a string header, no pickle anywhere) and
    names a registered architecture: what `check_checkpoint` and tabpfn both rely on."""
    path = get_path(name)
    assert path.suffix == ".safetensors"
    with safe_open(str(path), framework="pt", device="cpu") as fh:
        keys = list(fh.keys())
        assert keys and all(isinstance(fh.get_tensor(key), torch.Tensor) for key in keys)
        header = fh.metadata()
    assert header["architecture_name"].strip('"') in ARCHITECTURES
    assert check_checkpoint(path) == path


@pytest.mark.parametrize("name", available())
def test_tabpfn_reads_each_shipped_file_as_the_architecture_it_was_trained_as(name):
    """The file's header, the version tabpfn reads off its name (a "v3_5" name would read as v3)
    and `check_checkpoint` agree with the architecture of the host's pretraining config."""
    path = get_path(name)
    arch = _pretrain_config(name)["arch_name"]
    assert architecture_name(path) == arch
    assert resolve_model_version(path) == ModelVersion(VERSION_TAG[arch])


@pytest.mark.parametrize("name", available())
def test_a_missing_shipped_file_names_the_make_target_that_rebuilds_it(name, tmp_path, monkeypatch):
    """The hint names a Makefile target that pretrains this host, whose config exports to the
    package file `get_path` reads."""
    assert _pretrain_config(name)["export_path"] == f"retrofit/hosts/{SHIPPED_HOSTS[name]}"
    assert get_path(name) == ROOT / "retrofit" / "hosts" / SHIPPED_HOSTS[name]
    monkeypatch.setattr(shipped, "files", lambda package: tmp_path)
    with pytest.raises(RetrofitError, match=rf"shipped host '{name}' is missing .*`make (pretrain-\S+)`") as err:
        get_path(name)
    target, makefile = err.value.args[0].split("`make ")[1].split("`")[0], (ROOT / "Makefile").read_text()
    assert f"\n{target}:" in makefile, target
    recipe = makefile.split(f"\n{target}:")[1].split("\n\n")[0]
    assert f"experiments/pretrain_host.py pretrain={name}\n" in f"{recipe}\n"


class _RunsCode:
    """A pickle payload that would create a marker file if it were ever unpickled unsafely."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def test_checkpoint_whose_pickle_runs_code_is_refused_and_the_code_never_runs(tmp_path):
    path, marker = tmp_path / "evil.ckpt", tmp_path / "code_ran"
    torch.save({"state_dict": {}, "config": {}, "payload": _RunsCode(marker)}, path)
    with pytest.raises(RetrofitError, match=r"is refused: its pickle calls .*pathlib.*weights_only=False"):
        check_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize("name", available())
def test_shipped_host_does_in_context_regression(name):
    """Offline, from the package file: tabpfn fits the host's architecture, and on diabetes
    (seed-0 70/30 split) the shipped host is far better than the mean predictor and within 10% of
    ridge (the bar's per-dataset ratios are in results/host_quality.csv)."""
    from sklearn.linear_model import RidgeCV

    X_tr, X_te, y_tr, y_te = diabetes_split()
    regressor = make_regressor(get_path(name), n_estimators=4, random_state=0).fit(X_tr, y_tr)
    assert type(regressor.models_[0]).__module__ == ARCHITECTURES[_pretrain_config(name)["arch_name"]].module
    host = rmse(y_te, regressor.predict(X_te))
    assert host < 0.9 * rmse(y_te, np.full_like(y_te, y_tr.mean()))
    assert host < 1.1 * rmse(y_te, RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_tr, y_tr).predict(X_te))


def test_unknown_host_lists_available():
    with pytest.raises(RetrofitError, match=r"shipped hosts: .*tiny_v3"):
        get_path("tiny_v9")


def test_missing_checkpoint_fails_fast_without_download(tmp_path):
    start = time.perf_counter()
    with pytest.raises(RetrofitError, match="does not exist"):
        make_regressor(tmp_path / "nope-v3.ckpt")
    assert time.perf_counter() - start < 5.0  # offline validation, not a hub timeout


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        (b"not a checkpoint", ".safetensors", "not a readable safetensors"),
        (b"garbage", ".ckpt", "could not be read"),
    ],
)
def test_unreadable_checkpoint_is_refused(tmp_path, content, suffix, message):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(content)
    with pytest.raises(RetrofitError, match=message):
        check_checkpoint(path)


def test_torch_file_that_is_not_tabpfn_is_refused(tmp_path):
    path = tmp_path / "other.ckpt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(RetrofitError, match="not a TabPFN checkpoint"):
        check_checkpoint(path)


def test_the_shipped_host_files_are_found_without_importing_torch_tabpfn_or_the_adapters():
    code = (
        "import sys; from retrofit.hosts import get_path, available; "
        "assert all(get_path(name).is_file() for name in available()); "
        "print(sorted(m for m in ('torch', 'tabpfn', 'retrofit.adapters') if m in sys.modules))"
    )
    out = run_python("-c", code)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


# --- the user's own weights, kept as HuggingFace and tabpfn keep them ----------------------------

REVISION = "0123456789abcdef0123456789abcdef01234567"


def _hub_cache(root: pathlib.Path, model: str, files: dict[str, pathlib.Path]) -> pathlib.Path:
    """The HuggingFace hub cache folder of `Prior-Labs/<model>` as a download leaves it: each of
    `files` (name -> source) a blob named by its sha256 in `blobs/`, linked from
    `snapshots/<REVISION>/<name>` by a relative symlink; `refs/main` names the revision."""
    repo = root / f"models--Prior-Labs--{model}"
    snapshot = repo / "snapshots" / REVISION
    for folder in (repo / "refs", repo / "blobs", snapshot):
        folder.mkdir(parents=True)
    (repo / "refs" / "main").write_text(REVISION)
    for name, source in files.items():
        data = source.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    return repo


def _predictions(path, **kw) -> np.ndarray:
    X, y = _data()
    return make_regressor(path, n_estimators=1, random_state=0, **kw).fit(X[:80], y[:80]).predict(X[80:])


def test_a_huggingface_cache_checkpoint_is_read_by_the_name_given_not_the_blob(tmp_path, monkeypatch, hydra_compose):
    """A `.safetensors` symlinked to its hash-named blob was read as a torch file ("Unsupported
    operand 176"); given as the file, its snapshot folder, the model's folder or on the command line,
    it is the weights of the file it links to, and tabpfn gets them under the given name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user_cache"))
    shipped_file = get_path("tiny_v3_5")
    repo = _hub_cache(tmp_path / "hub", "tabpfn_3_5", {"tabpfn-v3.5-20260909.safetensors": shipped_file})
    link = repo / "snapshots" / REVISION / "tabpfn-v3.5-20260909.safetensors"
    assert [check_checkpoint(given) for given in (link, link.parent, repo)] == [link] * 3
    assert file_digest(check_checkpoint(repo)) == file_digest(shipped_file)  # the host digest is of the bytes
    cfg = hydra_compose("sweep", ["host=checkpoint", f"host.path={repo}", "host.name=real_v3_5", "variant=oa_only"])
    assert case_from_hydra(cfg, cfg.hydra).host_path == link
    regressor = make_regressor(repo)
    handed = pathlib.Path(regressor.model_path)
    digest = hashlib.sha256(shipped_file.read_bytes()).hexdigest()
    assert handed == tmp_path / "user_cache" / "retrofit" / "checkpoints" / digest / link.name
    assert not handed.is_symlink() and handed.stat().st_ino == link.resolve().stat().st_ino  # a hard link
    assert resolve_model_version(handed) == ModelVersion.V3_5
    np.testing.assert_array_equal(_predictions(repo), _predictions(shipped_file))


def test_a_tabpfn_model_name_is_its_file_in_tabpfns_model_cache(tmp_path, monkeypatch):
    """ "v3", "auto" (tabpfn's default version, here v3) and the published file name are the file
    tabpfn keeps in its model cache, here a symlink into a HuggingFace cache (a `.ckpt`: tabpfn reads
    its blob as the torch file it is); a model not there is refused naming where it looked and the
    download that puts it there."""
    cache = tmp_path / "tabpfn_cache"
    monkeypatch.setattr(settings.tabpfn, "model_cache_dir", cache)
    monkeypatch.setattr(settings.tabpfn, "model_version", ModelVersion.V3)
    torch.save(Checkpoint(get_path("tiny_v3")).load(), tmp_path / "v3.ckpt")
    name = "tabpfn-v3-regressor-v3_default.ckpt"
    repo = _hub_cache(tmp_path / "hub", "tabpfn_3", {name: tmp_path / "v3.ckpt"})
    cache.mkdir()
    (cache / name).symlink_to(repo / "snapshots" / REVISION / name)
    assert [check_checkpoint(given, base_dir=tmp_path) for given in ("v3", "auto", name)] == [cache / name] * 3
    assert get_path("v3") == cache / name
    assert architecture_name(cache / name) == "tabpfn_v3"
    np.testing.assert_array_equal(_predictions("v3"), _predictions(get_path("tiny_v3")))
    missing = cache / "tabpfn-v2.5-regressor-v2.5_default.ckpt"
    with pytest.raises(RetrofitError) as err:
        check_checkpoint("v2.5")
    assert str(err.value) == (
        f"tabpfn model 'v2.5' is not in tabpfn's model cache (looked for {missing}; nothing is downloaded): put the "
        f"file there (online: hf download Prior-Labs/tabpfn_2_5 {missing.name} --local-dir {cache}), or set "
        "TABPFN_MODEL_CACHE_DIR to the folder holding it, or pass host.path=<its path>"
    )
    with pytest.raises(RetrofitError, match=rf"checkpoint {tmp_path / 'v3'} does not exist; pass host.path="):
        check_checkpoint("./v3", base_dir=tmp_path)  # a version name is never a path, and a path never a name


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            ["tabpfn-v2-regressor-a.safetensors", "tabpfn-v2-regressor-b.safetensors", "tabpfn-v2-classifier.ckpt"],
            r"holds 2 regressor checkpoints \['tabpfn-v2-regressor-a.safetensors', "
            r"'tabpfn-v2-regressor-b.safetensors'\]; pass host.path=<one of them>, "
            r"e.g. host.path=.*/tabpfn-v2-regressor-a.safetensors$",
        ),
        (
            ["tabpfn-v2-classifier.ckpt", "config.json"],
            r"holds no TabPFN regressor checkpoint \(a .ckpt or .safetensors file not named \*classifier\*; it holds "
            r"\['config.json', 'tabpfn-v2-classifier.ckpt'\]\); pass host.path=<a TabPFN .ckpt/.safetensors file",
        ),
    ],
)
def test_a_folder_without_exactly_one_regressor_checkpoint_is_refused_naming_its_files(tmp_path, files, message):
    repo = _hub_cache(tmp_path, "tabpfn_2", dict.fromkeys(files, get_path("tiny_v2")))
    for given in (repo, repo / "snapshots" / REVISION):
        with pytest.raises(RetrofitError, match=message):
            check_checkpoint(given)
    (repo / "refs" / "main").unlink()
    (repo / "snapshots" / "other").mkdir()
    with pytest.raises(RetrofitError, match=r"has 2 snapshots \['0123.*', 'other'\] and no refs/main naming one"):
        check_checkpoint(repo)
