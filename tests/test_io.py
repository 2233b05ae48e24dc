"""Atomic writes: whole files with the usual permissions, whoever wrote the temporary file; a write the
disk refuses is one line, and leaves the file as it was."""

import errno
import os
import stat
from pathlib import Path

import pytest
import torch
from refusals import one_line
from safetensors.torch import save_file

from retrofit.errors import RunnerError
from retrofit.io import FILE_MODE, WriteFailed, write_atomic, write_text_atomic
from retrofit.runner.store import UnitStore


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_results_are_written_with_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "x" / "file.txt", "text")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.read_text() == "text"
    assert [p.name for p in path.parent.iterdir()] == ["file.txt"]  # no temporary file left


def test_a_writer_that_replaces_the_file_by_an_owner_only_one_still_gives_the_usual_mode(tmp_path):
    """safetensors' save_file (the host checkpoints) writes 0600 files of its own."""
    path = write_atomic(tmp_path / "host.safetensors", lambda tmp: save_file({"w": torch.zeros(2)}, str(tmp)))
    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE == 0o666 & ~current_umask()


def test_a_full_disk_under_the_unit_store_is_one_line_naming_the_folder(tmp_path, monkeypatch):
    """ENOSPC while a unit's file was written under cache_dir ended the sweep in an OSError traceback;
    it is one line naming the folder and the fix, the unit's last file is as it was, and no
    temporary file is left."""
    runs = tmp_path / ".cache" / "runs"
    store = UnitStore(runs, columns=())
    store.write("abc", {"rmse": 1.0})
    before = store.path("abc").read_bytes()

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(WriteFailed) as err:
        store.write("abc", {"rmse": 2.0})
    assert isinstance(err.value, RunnerError)
    assert one_line(err) == (
        f"writing abc.json into {runs} failed (No space left on device); abc.json is as it was: free space there "
        "or choose another folder for it"
    )
    assert store.path("abc").read_bytes() == before and [p.name for p in runs.iterdir()] == ["abc.json"]
    monkeypatch.setattr(os, "mkdir", lambda *args, **kwargs: full(None))
    with pytest.raises(WriteFailed, match=rf"^writing x.txt into {tmp_path / 'new'} failed \(No space left"):
        write_text_atomic(tmp_path / "new" / "x.txt", "text")  # creating the folder fails alike
