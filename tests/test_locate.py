"""`retrofit.hosts.locate`: a checkpoint path that cannot be resolved, or a folder without one, is refused
saying what it holds."""

import hashlib
import os
import pathlib
import time
from functools import partial

import numpy as np
import pytest
import torch
from processes import ROOT
from refusals import one_line
from synthetic import regression_data
from tabpfn.checkpoint import Checkpoint
from tabpfn.constants import ModelVersion
from tabpfn.model_loading import resolve_model_version
from tabpfn.settings import settings

from retrofit import RetrofitRegressor
from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint, get_path, make_regressor
from retrofit.hosts.locate import WHAT, download_folder, usage
from retrofit.hosts.validation import architecture_name
from retrofit.runner.identity import file_digest, host_digest
from retrofit.runner.sweep_config import case_from_hydra


def test_symlink_loop_is_refused(tmp_path):
    loop = tmp_path / "loop-v3.safetensors"
    os.symlink(loop, loop)
    with pytest.raises(RetrofitError, match=r"cannot be resolved .*symlink"):
        check_checkpoint(loop)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_checkpoint_that_is_a_pipe_or_a_device_is_named_as_not_a_regular_file(tmp_path, kind):
    """host.path=/dev/zero was answered "does not exist"."""
    path = tmp_path / "host.ckpt" if kind == "fifo" else pathlib.Path("/dev/zero")
    if kind == "fifo":
        os.mkfifo(path)
    with pytest.raises(RetrofitError) as err:
        check_checkpoint(path)
    assert one_line(err) == f"checkpoint {path} is not a regular file; {usage()}"


def test_folder_without_a_checkpoint_says_what_it_holds(tmp_path):
    (tmp_path / "notes.txt").write_text("weights elsewhere")
    with pytest.raises(RetrofitError, match=r"holds no TabPFN regressor checkpoint .*it holds \['notes.txt'\]\); pass"):
        check_checkpoint(tmp_path)


_data = partial(regression_data, n=120, curved=False)


REPOS = (
    "Prior-Labs/TabPFN-v2-reg, Prior-Labs/tabpfn_2_5, Prior-Labs/tabpfn_2_6, Prior-Labs/tabpfn_3, Prior-Labs/tabpfn_3_5"
)
"""The gated HuggingFace repos of tabpfn's regressors (`tabpfn.model_loading.ModelSource`, at the pinned tabpfn)."""


def _where_weights_come_from(repo: str, file: str, folder: pathlib.Path) -> str:
    return (
        f"real TabPFN weights are Prior Labs' gated HuggingFace repos ({REPOS}): accept the licence at "
        f"https://huggingface.co/{repo}, `hf auth login`, then `hf download {repo} {file} --local-dir {folder}` "
        "(docs/hosts.md#your-own-weights)"
    )


@pytest.mark.parametrize(
    ("name", "repo", "file"),
    [
        ("nope-v3.ckpt", "Prior-Labs/tabpfn_3", "tabpfn-v3-regressor-v3_default.ckpt"),  # the version it names
        ("weights.safetensors", "Prior-Labs/tabpfn_3_5", "tabpfn-v3.5-20260909.safetensors"),  # tabpfn's default
        ("tabpfn-v2.5-regressor-v2.5_real.ckpt", "Prior-Labs/tabpfn_2_5", "tabpfn-v2.5-regressor-v2.5_real.ckpt"),
    ],
)
def test_a_missing_checkpoint_fails_fast_saying_where_real_weights_come_from(
    tmp_path, monkeypatch, hydra_compose, name, repo, file
):
    """In Python and on the command line, offline (not a hub timeout): what to pass, in the caller's
    spelling (the command line's `host.path=`, a Python function's own argument), then the gated repo
    and the download into the folder given of the file named if tabpfn publishes it, else of the
    regressor of the version the name names, or of tabpfn's default version."""
    monkeypatch.setattr(settings.tabpfn, "model_version", ModelVersion.V3_5)
    missing = tmp_path / name
    cfg = hydra_compose("sweep", ["host=checkpoint", f"host.path={missing}", "host.name=mine"])
    start = time.perf_counter()
    refusers = [
        (f"path='{WHAT}'", make_regressor),
        (f"path='{WHAT}'", check_checkpoint),
        (f"host.path={WHAT}", lambda _: case_from_hydra(cfg, cfg.hydra)),
        (f"model_path='{WHAT}'", lambda path: RetrofitRegressor(model_path=path).fit(*_data())),
    ]
    for spelt, refuse in refusers:
        with pytest.raises(RetrofitError) as err:
            refuse(missing)
        where = _where_weights_come_from(repo, file, tmp_path)
        assert one_line(err) == f"checkpoint {missing} does not exist; pass {spelt}; {where}"
    assert time.perf_counter() - start < 5.0
    assert "\n## Your own weights\n" in (ROOT / "docs" / "hosts.md").read_text()  # the section the message links


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
    assert host_digest(repo) == file_digest(shipped_file)  # the host digest is of the bytes
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
    assert one_line(err) == (
        f"tabpfn model 'v2.5' is not in tabpfn's model cache (looked for {missing}; nothing is downloaded): put the "
        "file there, set TABPFN_MODEL_CACHE_DIR to the folder holding it, or pass path='<its path>'; "
        + _where_weights_come_from("Prior-Labs/tabpfn_2_5", missing.name, cache)
    )
    with pytest.raises(RetrofitError, match=rf"checkpoint {tmp_path / 'v3'} does not exist; pass path='<a TabPFN"):
        check_checkpoint("./v3", base_dir=tmp_path)  # a version name is never a path, and a path never a name


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            ["tabpfn-v2-regressor-a.safetensors", "tabpfn-v2-regressor-b.safetensors", "tabpfn-v2-classifier.ckpt"],
            r"holds 2 regressor checkpoints \['tabpfn-v2-regressor-a.safetensors', "
            r"'tabpfn-v2-regressor-b.safetensors'\]; pass one of them, "
            r"e.g. path='.*/tabpfn-v2-regressor-a.safetensors'$",
        ),
        (
            ["tabpfn-v2-classifier.ckpt", "config.json"],
            r"holds no TabPFN regressor checkpoint \(a .ckpt or .safetensors file not named \*classifier\*; it holds "
            r"\['config.json', 'tabpfn-v2-classifier.ckpt'\]\); pass path='<a TabPFN .ckpt/.safetensors file",
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


@pytest.mark.parametrize("ref", ["../../../outside", "../../../../../../etc", "/etc", "sub/dir", "..", "a\\b"])
def test_a_refs_main_that_is_not_a_plain_name_is_refused_without_following_it(tmp_path, ref):
    """`refs/main` reading a path (here one that reaches a folder of weights next to the cache, or
    /etc) loaded the weights found there or listed the folder it reached; it is refused in one line
    naming the ref and what to pass, and lists nothing."""
    repo = _hub_cache(tmp_path / "hub", "tabpfn_2", {"tabpfn-v2-regressor.safetensors": get_path("tiny_v2")})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tabpfn-v2-regressor-elsewhere.safetensors").write_bytes(get_path("tiny_v2").read_bytes())
    (repo / "refs" / "main").write_text(ref)
    with pytest.raises(RetrofitError) as err:
        check_checkpoint(repo)
    message = one_line(err)
    assert message == (
        f"HuggingFace model folder {repo}: refs/main reads {ref!r}, not a snapshot name (a plain name under "
        f"snapshots/, no '/' or '..'); write the snapshot's name into {repo / 'refs' / 'main'} or pass "
        f"path='{repo / 'snapshots' / '<revision>'}'"
    )
    assert "elsewhere" not in message and "passwd" not in message


def test_a_snapshot_linked_outside_its_model_folder_is_refused(tmp_path):
    """A snapshot that is a symlink to a folder outside the model's cache folder is not followed,
    named by `refs/main` or as the only snapshot."""
    repo = _hub_cache(tmp_path / "hub", "tabpfn_2", {})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tabpfn-v2-regressor.safetensors").write_bytes(get_path("tiny_v2").read_bytes())
    (repo / "snapshots" / REVISION).rmdir()
    (repo / "snapshots" / REVISION).symlink_to(outside)
    for ref in (REVISION, ""):
        (repo / "refs" / "main").write_text(ref)
        with pytest.raises(RetrofitError) as err:
            check_checkpoint(repo)
        assert one_line(err) == (
            f"snapshot {repo / 'snapshots' / REVISION} of HuggingFace model folder {repo} links outside that folder; "
            f"a snapshot is a folder under {repo / 'snapshots'}: pass path='<the checkpoint file>' to use weights "
            "kept elsewhere"
        )
    with pytest.raises(RetrofitError) as err:  # the snapshot named itself: refused alike, its target not listed
        check_checkpoint(repo / "snapshots" / REVISION)
    assert "links outside that folder" in one_line(err) and "safetensors" not in one_line(err)


@pytest.mark.parametrize("given", ["", "  ", None])
def test_a_blank_or_missing_checkpoint_is_refused_not_read_as_the_working_directory(given):
    """check_checkpoint("") searched the working directory (Path("") is "."), listing its files as a
    folder without a checkpoint; None ended in pathlib's TypeError."""
    with pytest.raises(RetrofitError) as err:
        check_checkpoint(given)
    assert one_line(err) == f"a checkpoint is a path or a tabpfn model name, got {given!r}; pass path='{WHAT}'"


def test_a_host_given_as_a_missing_file_in_python_names_model_path_and_where_weights_come_from(tmp_path, monkeypatch):
    """`RetrofitRegressor(host="/nope.ckpt")` said `use host=checkpoint host.path=...`, command-line syntax,
    and nothing of where weights come from; it names the estimator's own argument, and the download goes
    to tabpfn's model cache, not to `/` (the missing file's folder, a file system's root)."""
    cache = tmp_path / "cache"
    monkeypatch.setattr(settings.tabpfn, "model_cache_dir", cache)
    monkeypatch.setattr(settings.tabpfn, "model_version", ModelVersion.V3_5)
    with pytest.raises(RetrofitError) as err:
        RetrofitRegressor(host="/nope.ckpt").fit(*_data())
    assert one_line(err) == (
        "unknown host '/nope.ckpt'; shipped hosts: ['tiny_v3', 'tiny_v2', 'tiny_v3_5'], tabpfn models: ['auto', 'v2', "
        "'v2.5', 'v2.6', 'v3', 'v3.5', 'v3.5-fast']; a checkpoint file goes to model_path='/nope.ckpt', and "
        "/nope.ckpt does not exist: "
        + _where_weights_come_from("Prior-Labs/tabpfn_3_5", "tabpfn-v3.5-20260909.safetensors", cache)
    )
    with pytest.raises(RetrofitError) as err:
        RetrofitRegressor(host="tiny_v9").fit(*_data())
    assert one_line(err).endswith(f"]; for your own checkpoint pass model_path='{WHAT}'")


def test_the_download_goes_to_the_folder_a_user_chose_else_to_tabpfns_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setattr(settings.tabpfn, "model_cache_dir", cache)
    (tmp_path / "weights").mkdir()
    assert download_folder(tmp_path / "weights") == tmp_path / "weights"  # a real, writable folder
    assert download_folder(pathlib.Path("/")) == cache  # a file system's root: no one keeps weights there
    assert download_folder(tmp_path / "absent") == cache  # no such folder
    (tmp_path / "file").write_text("")
    assert download_folder(tmp_path / "file") == cache  # a file, not a folder
