"""A checkpoint handed to tabpfn under the name it was given.

tabpfn reads a checkpoint's version off the name it is given, but its format (`.safetensors` or a
torch file; `tabpfn.checkpoint.Checkpoint`) off the name symlinks resolve to: its loader resolves
the path first. A HuggingFace cache keeps every file as a hash-named blob behind a symlink that carries the
name, so tabpfn would read a `.safetensors` blob as a torch file. `tabpfn_path` gives tabpfn, for
such a file, a name that is no symlink: a hard link to the same bytes (a copy where the two folders
are on different file systems) at `<LINKS>/<sha256 of the bytes>/<given name>`, made once per
content and name, and made again whenever it no longer holds those bytes (a cache file replaced by
other bytes is never loaded under the digest of the ones it replaced). `LINKS` is
`$XDG_CACHE_HOME/retrofit/checkpoints` (default `~/.cache/retrofit/checkpoints`); removing it costs
only the next load's link.
"""

import hashlib
import os
import secrets
import shutil
from pathlib import Path

from tabpfn.checkpoint import Checkpoint

from retrofit.errors import RetrofitError


def links_dir() -> Path:
    """The folder of the named links (module docstring), from the environment at each call."""
    root = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(root) if root else Path.home() / ".cache") / "retrofit" / "checkpoints"


def tabpfn_path(checkpoint: Path) -> Path:
    """`checkpoint` itself where tabpfn reads its format right (the name it resolves to ends the same
    way), else the named link to its bytes (module docstring). RetrofitError if the link cannot be made."""
    target = checkpoint.resolve()
    if Checkpoint(target).is_safetensors == Checkpoint(checkpoint).is_safetensors:
        return checkpoint
    with open(target, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    link = links_dir() / digest / checkpoint.name
    if not _holds(link, target, digest):
        try:
            _link_or_copy(target, link)
        except OSError as exc:
            raise RetrofitError(
                f"{checkpoint} resolves to {target.name}, and tabpfn reads a file's format off that name; linking it "
                f"as {link} failed ({exc}): set XDG_CACHE_HOME to a writable folder, or pass a copy of the file named "
                f"{checkpoint.name}"
            ) from None
    return link


def _holds(link: Path, target: Path, digest: str) -> bool:
    """Whether `link` is a file holding the bytes whose sha256 is `digest` (those of `target`): the
    same file as `target` (a hard link), or bytes of that digest (a copy)."""
    if not link.is_file():
        return False
    if os.path.samefile(link, target):
        return True
    with open(link, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest() == digest


def _link_or_copy(target: Path, link: Path) -> None:
    """Make `link` a hard link to `target`, or a copy of it across file systems, atomically."""
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp = link.with_name(f".{link.name}.{secrets.token_hex(6)}.tmp")
    try:
        try:
            os.link(target, tmp)
        except OSError:  # another file system, or no hard links there: the bytes themselves
            shutil.copyfile(target, tmp)
        os.replace(tmp, link)
    finally:
        tmp.unlink(missing_ok=True)
