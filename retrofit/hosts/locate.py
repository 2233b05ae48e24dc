"""From the way a user keeps TabPFN weights to one checkpoint file, offline.

What `host.path`, `check_checkpoint` and `make_regressor` take (`checkpoint_file`):

- a checkpoint file (`.ckpt` or `.safetensors`), or a symlink to one, kept under the name given,
  not the name symlinks resolve to: tabpfn reads the model version off that name
  (`tabpfn.model_loading.resolve_model_version`) and the harness reads the format off it. A
  HuggingFace cache keeps files this way: `snapshots/<revision>/<name>` links to a hash-named blob;
- a folder holding exactly one regressor checkpoint (a `.ckpt` or `.safetensors` file whose name
  does not say "classifier"): a HuggingFace cache snapshot, or the model's cache folder
  (`models--Prior-Labs--tabpfn_2_5`) whose `refs/main` names the snapshot;
- a tabpfn model name (`tabpfn_model`): a version ("v2.5", "v3.5", ...; "auto" is the version
  `TabPFNRegressor()` loads), meaning the regressor tabpfn loads for it from its model cache
  (`TABPFN_MODEL_CACHE_DIR`, else the user cache's `tabpfn/`), or a bare file name that is not in
  the start directory, looked up in that cache as tabpfn looks it up.

Nothing is ever downloaded. torch and tabpfn are imported only to look a name up in tabpfn's cache.
A checkpoint that is not there is refused saying where real weights come from (`weights_source`).
A refusal names the argument the checkpoint came through as its caller spells it (`passed`):
`host.path=<file>` on the command line (the jobs run under `checkpoint_argument(CLI_ARGUMENT)`),
`model_path='<file>'` from `RetrofitRegressor`, `path='<file>'` from `check_checkpoint` and
`make_regressor`.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from retrofit.errors import RetrofitError, bounded, listing

CHECKPOINT_SUFFIXES = (".ckpt", ".safetensors")
"""The file endings of TabPFN checkpoints: a torch file, or safetensors."""
AUTO = "auto"
"""The model name for the version `TabPFNRegressor()` loads (tabpfn's `TABPFN_MODEL_VERSION`)."""
WHAT = "<a TabPFN .ckpt/.safetensors file, a folder holding one, or a tabpfn model name such as v2.5>"
"""What a checkpoint argument takes."""
WEIGHTS_DOC = "docs/hosts.md#your-own-weights"
"""Where the docs say how to get real TabPFN weights."""
CLI_ARGUMENT = "host.path"
"""How the command line names a checkpoint (`host=checkpoint host.path=<file>`)."""
_ARGUMENT: ContextVar[str] = ContextVar("checkpoint_argument", default="path")


@contextmanager
def checkpoint_argument(name: str) -> Iterator[None]:
    """Within it, refusals name the checkpoint's argument `name` (`passed`): `CLI_ARGUMENT` in a job,
    `model_path` in `RetrofitRegressor.fit`, `host` in `host_file` (`retrofit.compare`, `retrofit.explain`);
    `path` (`check_checkpoint`'s, `make_regressor`'s) elsewhere. Inside a job the command line's
    spelling stays: its user gave the checkpoint as `host.path=`, whatever function the job calls."""
    token = _ARGUMENT.set(CLI_ARGUMENT if _ARGUMENT.get() == CLI_ARGUMENT else name)
    try:
        yield
    finally:
        _ARGUMENT.reset(token)


def passed(value: str | os.PathLike) -> str:
    """`value` given as the checkpoint's argument, spelt as its caller spells it: `host.path=/x.ckpt`
    on the command line, `model_path='/x.ckpt'` in Python."""
    name = _ARGUMENT.get()
    return f"{name}={os.fspath(value)}" if name == CLI_ARGUMENT else f"{name}={os.fspath(value)!r}"


def usage() -> str:
    """What to pass for a checkpoint, in the caller's spelling (`passed`)."""
    return f"pass {passed(WHAT)}"


def own_checkpoint(name: str) -> str:
    """Where a checkpoint goes, for a host `name` that is no host's (`retrofit.hosts.shipped.get_path`): on
    the command line `host=checkpoint host.path=<file>`; in Python the checkpoint's own argument, with where
    real weights come from when `name` is a checkpoint file that is not there (`weights_source`)."""
    if _ARGUMENT.get() == CLI_ARGUMENT:
        return f"for your own checkpoint use host=checkpoint {passed('/path/to/model.ckpt')} (or a folder)"
    path = Path(name).expanduser().absolute()
    if Path(name).suffix not in CHECKPOINT_SUFFIXES or path.exists():
        return f"for your own checkpoint {usage()}"
    where = weights_source(path.name, path.parent)
    return f"a checkpoint file goes to {passed(name)}, and {path} does not exist: {where}"


def checkpoint_file(given: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> Path:
    """The checkpoint file `given` stands for (see the module docstring), absolute, with symlinks kept.

    A relative path is taken from `base_dir` (default: the working directory); a string that is a tabpfn
    version name is always that model, never a path (`./v2.5` is the file). RetrofitError for a blank
    string (which `Path` reads as the working directory) or a value that is no path (None), a symlink
    loop, a missing file or one that is no regular file (a pipe, a device), a folder without exactly one
    regressor checkpoint, or a tabpfn model that is not in tabpfn's cache, each saying where it looked
    and what to pass.
    """
    if not isinstance(given, str | os.PathLike) or not os.fspath(given).strip():  # Path("") is the working directory
        raise RetrofitError(f"a checkpoint is a path or a tabpfn model name, got {given!r}; {usage()}")
    if isinstance(given, str) and given in tabpfn_versions():
        return tabpfn_model(given)
    path = Path(given).expanduser()
    path = path if path.is_absolute() else Path(base_dir or Path.cwd()).absolute() / path
    try:
        path.resolve()
    except (RuntimeError, OSError) as exc:  # RuntimeError("Symlink loop ...") on Python < 3.13, OSError after
        raise RetrofitError(
            f"checkpoint {path} cannot be resolved ({exc}); follow its symlinks by hand and pass the checkpoint "
            f"file itself, {passed('<file>')}"
        ) from None
    if path.is_dir():
        return _in_folder(path)
    if path.is_file():
        return path
    if path.exists():  # a pipe or a device (/dev/zero, which would be read without end)
        raise RetrofitError(f"checkpoint {path} is not a regular file; {usage()}")
    if not os.path.dirname(os.fspath(given)):  # a bare file name: tabpfn's model cache next, as tabpfn does
        return tabpfn_model(os.fspath(given), searched=path.parent)
    raise RetrofitError(f"checkpoint {path} does not exist; {usage()}; {weights_source(path.name, path.parent)}")


def _in_folder(folder: Path) -> Path:
    """The one regressor checkpoint in `folder` (a model's HuggingFace cache folder: in its snapshot;
    one snapshot of such a folder, named itself, is checked to resolve inside it as `_snapshot` does)."""
    if (folder / "snapshots").is_dir():
        snapshot = _snapshot(folder)
    elif folder.parent.name == "snapshots":
        snapshot = _inside(folder.parent.parent, folder)
    else:
        snapshot = folder
    entries = sorted(snapshot.iterdir())
    found = [p for p in entries if p.suffix in CHECKPOINT_SUFFIXES and "classifier" not in p.name and p.is_file()]
    if len(found) == 1:
        return found[0]
    if found:
        raise RetrofitError(
            f"checkpoint folder {snapshot} holds {len(found)} regressor checkpoints "
            f"{listing([p.name for p in found])}; pass one of them, e.g. {passed(found[0])}"
        )
    raise RetrofitError(
        f"checkpoint folder {snapshot} holds no TabPFN regressor checkpoint (a .ckpt or .safetensors file not named "
        f"*classifier*; it holds {listing([p.name for p in entries])}); {usage()}"
    )


def _snapshot(repo: Path) -> Path:
    """The snapshot a model's HuggingFace cache folder `repo` points at: the one `refs/main` names,
    else its only snapshot; RetrofitError naming the snapshots otherwise.

    `refs/main` must read a plain name (no path separator, not `.` or `..`) and the snapshot must
    resolve inside `repo`: a ref or a snapshot link that leads elsewhere is refused in one line,
    never followed, so a cache folder cannot load weights from, or list, a folder outside it.
    """
    ref = repo / "refs" / "main"
    revision = ref.read_text(errors="replace").strip() if ref.is_file() else ""
    if revision and not _is_plain_name(revision):
        raise RetrofitError(
            f"HuggingFace model folder {repo}: refs/main reads {bounded(repr(revision), 100)}, not a snapshot "
            f"name (a plain name under snapshots/, no '/' or '..'); write the snapshot's name into {ref} or pass "
            f"{passed(repo / 'snapshots' / '<revision>')}"
        )
    if revision and (repo / "snapshots" / revision).is_dir():
        return _inside(repo, repo / "snapshots" / revision)
    snapshots = sorted(p for p in (repo / "snapshots").iterdir() if p.is_dir())
    if len(snapshots) == 1:
        return _inside(repo, snapshots[0])
    raise RetrofitError(
        f"HuggingFace model folder {repo} has {len(snapshots)} snapshots {listing([p.name for p in snapshots])} and "
        f"no refs/main naming one of them; pass {passed(repo / 'snapshots' / '<revision>')}"
    )


def _is_plain_name(name: str) -> bool:
    """Whether `name` names a folder's entry and nothing else: no `/`, `\\` or NUL, not `.` or `..`."""
    return name not in (".", "..") and not set(name) & set("/\\\0")


def _inside(repo: Path, snapshot: Path) -> Path:
    """`snapshot`, checked to resolve inside the model folder `repo` (a snapshot linked elsewhere is refused)."""
    if not snapshot.resolve().is_relative_to(repo.resolve()):
        raise RetrofitError(
            f"snapshot {snapshot} of HuggingFace model folder {repo} links outside that folder; a snapshot is a "
            f"folder under {repo / 'snapshots'}: pass {passed('<the checkpoint file>')} to use weights kept elsewhere"
        )
    return snapshot


def tabpfn_versions() -> list[str]:
    """The tabpfn model names that are versions: `AUTO` and tabpfn's `ModelVersion`s ("v2", "v2.5", ...)."""
    from tabpfn.constants import ModelVersion

    return [AUTO, *(version.value for version in ModelVersion)]


def tabpfn_model(name: str, searched: Path | None = None) -> Path:
    """The regressor checkpoint in tabpfn's model cache that tabpfn loads for `name`: a version of
    `tabpfn_versions` (its default regressor, as `TabPFNRegressor.create_default_for_version` picks
    it), or a file name. RetrofitError if the file is not there, saying where it looked (`searched`
    too: the folder a bare file name was looked for first) and how to put it there (`weights_source`)."""
    from tabpfn.model_loading import get_cache_dir, resolve_model_path, resolve_model_version

    if name in tabpfn_versions():
        version = resolve_model_version(None).value if name == AUTO else name
        (path,), *_ = resolve_model_path(None, "regressor", version)
    else:
        path = get_cache_dir() / name
    if path.is_file():
        return path
    missing = f"tabpfn model {name!r} is not" if searched is None else f"no file {name!r} in {searched}, nor"
    raise RetrofitError(
        f"{missing} in tabpfn's model cache (looked for {path}; nothing is downloaded): put the file there, set "
        f"TABPFN_MODEL_CACHE_DIR to the folder holding it, or pass {passed('<its path>')}; "
        f"{weights_source(path.name, path.parent)}"
    )


def download_folder(folder: Path) -> Path:
    """Where the download steps put a missing checkpoint of `folder`: that folder where it is one a user
    chose to keep weights in (an existing, writable folder other than a file system's root), else tabpfn's
    model cache, where a tabpfn model name finds it (`/nope.ckpt` downloads there, not into `/`)."""
    from tabpfn.model_loading import get_cache_dir

    chosen = folder.is_dir() and os.access(folder, os.W_OK) and folder != Path(folder.anchor)
    return folder if chosen else Path(get_cache_dir())


def weights_source(name: str, folder: Path) -> str:
    """Where real TabPFN weights come from, for a checkpoint `name` that is not in `folder`: Prior Labs'
    gated HuggingFace repos (tabpfn's `ModelSource`), and the steps that download into
    `download_folder(folder)` the file `name` if tabpfn publishes it, else the default regressor of the
    version `name` names (tabpfn's default version where it names none); ends with `WEIGHTS_DOC`."""
    from tabpfn.model_loading import ModelSource, resolve_model_path, resolve_model_version

    sources = [getattr(ModelSource, method)() for method in vars(ModelSource) if method.startswith("get_")]
    regressors = [s for s in sources if any("classifier" not in file for file in s.filenames)]
    if not any(name in source.filenames for source in regressors):
        named = resolve_model_version(Path(name)).value  # "v2" for a name that names no version
        version = named if named in name else resolve_model_version(None).value
        (default,), *_ = resolve_model_path(None, "regressor", version)
        name = default.name
    repo = next(source.repo_id for source in regressors if name in source.filenames)
    repos = ", ".join(dict.fromkeys(source.repo_id for source in regressors))
    return (
        f"real TabPFN weights are Prior Labs' gated HuggingFace repos ({repos}): accept the licence at "
        f"https://huggingface.co/{repo}, `hf auth login`, then "
        f"`hf download {repo} {name} --local-dir {download_folder(folder)}` ({WEIGHTS_DOC})"
    )
