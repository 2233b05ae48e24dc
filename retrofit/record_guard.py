"""Where the runner may write, checked before the first case runs.

`RECORD_DIR` is the checkout's committed `results/`. A path lies in it when its real path (symlinks
and `..` resolved) is it or under it, and a command may write there only when the environment
variable `RECORD_ENV` is `1`: the Makefile's record targets (`make retrofit`, `make ablation`, ...)
set it for their own command and nothing else does, so no config file, config directory
(`-cd`/`-cn`), copy of a config, symlink or override can aim a run at the record
(`check_record_outputs`). Output and cache directories must be (or be creatable as) writable
directories, tried by creating and removing a file, not by permission bits (which root ignores);
a cache directory never lies in the record.
"""

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from retrofit.errors import RunnerError

RECORD_DIR = Path(__file__).resolve().parents[1] / "results"
"""The committed `results/` of the checkout holding this package."""
RECORD_ENV = "RETROFIT_RECORD"
"""The environment variable (value `1`) that the Makefile's record targets set: only then may a
command write into `RECORD_DIR`."""
ELSEWHERE = "outputs/results"
"""Where the refusals suggest writing results instead (the `results_dir` default of `configs/sweep.yaml`)."""
EXAMPLES = {"results_dir": ELSEWHERE, "cache_dir": ".cache"}
"""An example value per output directory key, for the message refusing a null one."""


def writable_dir(path: Path | str | None, key: str) -> Path:
    """`path` if it is a writable directory or could be created as one; RunnerError naming `key`
    (a config key such as `results_dir`) when it is null or empty (`key=`, which would otherwise
    mean the current directory), a file, under a file, or not writable. Creates nothing."""
    if path is None or str(path) == "":
        said = "null" if path is None else "empty"
        raise RunnerError(f"{key} is {said}; give a directory, e.g. {key}={EXAMPLES.get(key, ELSEWHERE)}")
    path = Path(path)
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        where = "" if existing == path else f" ({existing} is a file)"
        raise RunnerError(f"{key}={path} is not a directory{where}; choose another {key}")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise RunnerError(f"{key}={path} is not writable ({err.strerror}: {existing}); choose another {key}") from None
    return path


def in_record(path: Path | str, record_dir: Path = RECORD_DIR) -> bool:
    """Whether `path`, its symlinks and `..` resolved, is `record_dir` or lies under it."""
    real, record = os.path.realpath(path), os.path.realpath(record_dir)
    return real == record or real.startswith(record + os.sep)


def recording() -> bool:
    """Whether this command is a record target's (`RECORD_ENV=1`)."""
    return os.environ.get(RECORD_ENV) == "1"


def outside_record(path: Path, key: str, record_dir: Path = RECORD_DIR) -> Path:
    """`path` unless it lies in the committed record directory; RunnerError naming `key`."""
    if in_record(path, record_dir):
        raise RunnerError(f"{key}={path} is inside the committed {record_dir}; choose another {key}, e.g. {key}=.cache")
    return path


def check_record_outputs(paths: Iterable[Path | str], record_dir: Path = RECORD_DIR) -> None:
    """RunnerError naming the first of `paths` that lies in the committed `record_dir` unless this
    command is a record target's (`recording`), with where to write instead. Checked before any work."""
    inside = [Path(p) for p in paths if in_record(p, record_dir)]
    if inside and not recording():
        raise RunnerError(
            f"{inside[0]} is in the committed record {record_dir}, written only by its make target "
            f"({RECORD_ENV}=1); write elsewhere: the sweep's results_dir={ELSEWHERE}, another job's output key "
            f"(e.g. output=outputs/{inside[0].name})"
        )


def writable_file(path: Path | str, key: str) -> Path:
    """`path` if a file may be written there: RunnerError naming `key` when it is empty, a folder,
    an existing file that cannot be opened for writing, or in a folder `writable_dir` refuses.
    Changes nothing."""
    if str(path) == "":
        raise RunnerError(f"{key} is empty; give a file, e.g. {key}=outputs/<name>.csv")
    path = Path(path)
    if path.is_dir():
        raise RunnerError(f"{key}={path} is a folder; give a file in it, e.g. {key}={path}/<name>.csv")
    if path.exists():
        try:
            with open(path, "r+b"):
                pass
        except OSError as err:
            raise RunnerError(f"{key}={path} cannot be written ({err.strerror}); choose another {key}") from None
        return path
    writable_dir(path.parent, key)
    return path
