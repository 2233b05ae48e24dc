"""Atomic writes: whole files with the usual permissions, whoever wrote the temporary file."""

import os
import stat

import torch
from safetensors.torch import save_file

from retrofit.io import FILE_MODE, write_atomic, write_text_atomic


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
