"""Atomic file writes: a reader (or a rerun after a crash) sees the old file or the new one, never half."""

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a fresh temporary file next to `path`, then rename it onto `path`.

    The rename is atomic on POSIX filesystems, so concurrent writers (joblib workers) and
    interrupted runs leave either no file or a whole one. Parents are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """`write_atomic` for text."""
    return write_atomic(path, lambda tmp: tmp.write_text(text))


def write_png(fig, path: Path) -> Path:
    """Save a matplotlib figure as PNG (120 dpi) atomically."""
    return write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
