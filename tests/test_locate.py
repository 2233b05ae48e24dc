"""`retrofit.hosts.locate`: a checkpoint path that cannot be resolved, or a folder without one, is refused
saying what it holds."""

import os

import pytest

from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint


def test_symlink_loop_is_refused(tmp_path):
    loop = tmp_path / "loop-v3.safetensors"
    os.symlink(loop, loop)
    with pytest.raises(RetrofitError, match=r"cannot be resolved .*symlink"):
        check_checkpoint(loop)


def test_folder_without_a_checkpoint_says_what_it_holds(tmp_path):
    (tmp_path / "notes.txt").write_text("weights elsewhere")
    with pytest.raises(RetrofitError, match=r"holds no TabPFN regressor checkpoint .*it holds \['notes.txt'\]\); pass"):
        check_checkpoint(tmp_path)
