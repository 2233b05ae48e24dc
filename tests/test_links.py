"""`retrofit.hosts.links`: the named link tabpfn reads holds the digested bytes, or is made again."""

from retrofit.hosts import get_path


def test_a_named_link_replaced_by_other_bytes_is_made_again(tmp_path, monkeypatch):
    """The named-link cache used to serve whatever file sat at `<sha256>/<name>`: weights replaced
    there (perturbed, NaN) were loaded under the original file's digest. A link that no longer holds
    the digested bytes is made again before tabpfn reads it."""
    from retrofit.hosts.links import tabpfn_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    blob = tmp_path / "blob"
    blob.write_bytes(get_path("tiny_v3").read_bytes())
    named = tmp_path / "tiny.safetensors"
    named.symlink_to(blob)
    link = tabpfn_path(named)
    assert link.samefile(blob)
    link.unlink()
    link.write_bytes(get_path("tiny_v2").read_bytes())  # other bytes under the same digest folder
    assert tabpfn_path(named) == link and link.read_bytes() == blob.read_bytes()
    link.unlink()
    link.write_bytes(blob.read_bytes())  # a copy of the right bytes is kept
    inode = link.stat().st_ino
    assert tabpfn_path(named) == link and link.stat().st_ino == inode
