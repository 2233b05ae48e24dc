"""Atomic file writes: a reader (or a rerun after a crash) sees the old file or the new one, never half.

Files get mode 0666 less the process umask (0644 under the usual umask 022), as `open()` creates
them, even where the writer replaces the temporary file by an owner-only one of its own (as
`tempfile.mkstemp` and safetensors' `save_file` do).
"""

import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from retrofit.errors import RunnerError

_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK
"""The mode `open()` gives a new file under this process's umask."""

if TYPE_CHECKING:  # pandas is needed by the caller that passes a frame, not to import this module
    import pandas as pd


class WriteFailed(RunnerError):
    """Writing a file into `folder` failed for want of space or another OSError (`reason`, the
    system's words); the message names the folder and the fix, and the file is as it was."""

    def __init__(self, path: Path, err: OSError):
        self.folder, self.reason = path.parent, err.strerror or str(err)
        super().__init__(
            f"writing {path.name} into {self.folder} failed ({self.reason}); {path.name} is as it was: free space "
            "there or choose another folder for it"
        )


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a fresh temporary file next to `path`, then rename it onto `path`.

    The rename is atomic on POSIX filesystems, so concurrent writers (joblib workers) and
    interrupted runs leave either no file or a whole one. Parents are created. `WriteFailed` (one
    line) when the disk is full or another OSError stops the write: `path` is left as it was.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _fresh_file(path)
    except OSError as err:
        raise WriteFailed(path, err) from None
    try:
        write(tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except OSError as err:
        raise WriteFailed(path, err) from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _fresh_file(path: Path) -> Path:
    """A new empty temporary file next to `path`, under a fresh name; O_EXCL refuses one another writer holds."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def write_text_atomic(path: Path, text: str) -> Path:
    """`write_atomic` for text."""
    return write_atomic(path, lambda tmp: tmp.write_text(text))


def write_csv(frame: "pd.DataFrame", path: Path) -> Path:
    """`frame` as CSV (no index), atomically."""
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))


def write_png(fig, path: Path) -> Path:
    """Save a matplotlib figure as PNG (120 dpi) atomically."""
    return write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))


PATIENCE = 1.0
"""Seconds a writer waits on a lock in silence; then it says what it waits for (`locked`)."""


def check_lock_path(lock_path: Path, what: str) -> Path:
    """`lock_path` unless no lock can be taken there: RunnerError for a folder, and for a link, which
    `filelock` does not follow (an OSError at the first lock), so that no lock file is another's."""
    if lock_path.is_symlink() or lock_path.is_dir():
        kind = "a link" if lock_path.is_symlink() else "a folder"
        raise RunnerError(f"{lock_path} is {kind}, and {what} is written under a lock file of that name; remove it")
    return lock_path


@contextmanager
def locked(lock_path: Path, what: str) -> Iterator[None]:
    """Hold the file lock `lock_path` (`filelock`) around the block, which writes `what`; after
    `PATIENCE` seconds of waiting, say on stderr which lock it waits for and why, then wait on.
    RunnerError when the lock path is no lock file (`check_lock_path`)."""
    lock_path = check_lock_path(Path(lock_path), what)
    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=PATIENCE)
    except Timeout:
        sys.stderr.write(f"waiting for {lock_path}: another process is writing {what}\n")
        sys.stderr.flush()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextmanager
def staged(folder: Path) -> Iterator[Path]:
    """A fresh hidden folder inside `folder` for the block to write a set of files into; when the
    block ends, each file moves onto its name in `folder` (a rename each), so `folder` never holds
    some files of this write beside others of the last. RunnerError when writing fails for want of
    space or another OSError: nothing in `folder` was changed, and the message says so."""
    folder = Path(folder)
    stage = Path(tempfile.mkdtemp(prefix=".staged-", dir=folder))
    try:
        try:
            yield stage
        except (OSError, WriteFailed) as err:
            reason = err.reason if isinstance(err, WriteFailed) else err.strerror or str(err)
            raise RunnerError(
                f"writing into {folder} failed ({reason}); none of its files changed: free space there or choose "
                "another folder"
            ) from None
        for path in sorted(stage.iterdir()):
            os.replace(path, folder / path.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
