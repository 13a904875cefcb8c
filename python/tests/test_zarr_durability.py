"""GDSStore durability (reliability audit #5 a and c): the temporary file is fsync'ed before
the rename and the directory after it; temporary files are never listed and stale ones are
swept."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

zarr = pytest.importorskip("zarr", minversion="3")

from zarr.core.buffer import cpu  # noqa: E402

import kvikio  # noqa: E402
import kvikio.zarr as kz  # noqa: E402
from kvikio.zarr import GDSStore  # noqa: E402


@pytest.fixture
def fsync_log(monkeypatch):
    """Records every fsync as (what, path, snapshot) where path is the synced file or
    directory; the snapshot callback (set by the test) captures the state at that moment."""
    log = []
    state = {"snapshot": lambda: None}
    real_fsync = os.fsync

    def recording_fsync(fd):
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        log.append(("dir" if path.is_dir() else "file", path, state["snapshot"]()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    # Where CuFile has its own fsync (libkvikio's FileHandle::fsync), record that too.
    real_method = getattr(kvikio.CuFile, "fsync", None)
    if real_method is not None:

        def recording_method(self):
            path = Path(os.readlink(f"/proc/self/fd/{self.fileno()}"))
            log.append(("file", path, state["snapshot"]()))
            real_method(self)

        monkeypatch.setattr(kvikio.CuFile, "fsync", recording_method)
    return log, state


def test_set_syncs_the_file_before_the_rename_and_the_directory_after(tmp_path, fsync_log):
    log, state = fsync_log
    store = GDSStore(tmp_path)
    store.set_sync("k", cpu.Buffer.from_bytes(b"old value"))
    log.clear()
    key = tmp_path / "k"
    state["snapshot"] = lambda: key.read_bytes()
    store.set_sync("k", cpu.Buffer.from_bytes(b"new value"))

    (what0, path0, seen0), (what1, path1, seen1) = log
    # 1. the temporary file, while the key still holds the old value (not yet renamed)
    assert what0 == "file" and path0.parent == tmp_path
    assert path0.name.startswith(".k.") and kz._is_partial(path0.name)
    assert seen0 == b"old value"
    # 2. then the directory, after the rename
    assert (what1, path1) == ("dir", tmp_path)
    assert seen1 == b"new value"
    assert [p.name for p in tmp_path.iterdir()] == ["k"]


def test_new_directories_are_synced_into_their_parents(tmp_path, fsync_log):
    log, _ = fsync_log
    GDSStore(tmp_path).set_sync("c/0/0", cpu.Buffer.from_bytes(b"chunk"))
    kinds = [(what, path if what == "dir" else path.parent) for what, path, _ in log]
    assert kinds == [
        ("dir", tmp_path),  # holds the new "c"
        ("dir", tmp_path / "c"),  # holds the new "0"
        ("file", tmp_path / "c" / "0"),  # the temporary file
        ("dir", tmp_path / "c" / "0"),  # the rename
    ]
    assert (tmp_path / "c" / "0" / "0").read_bytes() == b"chunk"


async def test_exclusive_set_syncs_too(tmp_path, fsync_log):
    log, _ = fsync_log
    store = await GDSStore.open(root=tmp_path)
    await store.set_if_not_exists("k", cpu.Buffer.from_bytes(b"first"))
    assert [what for what, _, _ in log] == ["file", "dir"]
    await store.set_if_not_exists("k", cpu.Buffer.from_bytes(b"second"))
    assert (tmp_path / "k").read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["k"]


def _leftover(directory: Path, key_name: str, age_s: float) -> Path:
    p = directory / f".{key_name}.{'ab' * 16}.partial"
    p.write_bytes(b"half a val")
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


async def _keys(gen) -> list[str]:
    return sorted([k async for k in gen])


async def test_temporary_files_are_not_listed_and_stale_ones_are_swept(tmp_path):
    store = await GDSStore.open(root=tmp_path)
    await store.set("zarr.json", cpu.Buffer.from_bytes(b"{}"))
    await store.set("c/0", cpu.Buffer.from_bytes(b"chunk"))
    await store.set(".zattrs", cpu.Buffer.from_bytes(b"{}"))  # a dot key is still a key
    stale_root = _leftover(tmp_path, "zarr.json", 2 * 3600)
    stale_c = _leftover(tmp_path / "c", "0", 2 * 3600)
    young_c = tmp_path / "c" / f".0.{'cd' * 16}.partial"
    young_c.write_bytes(b"in flight")

    # A read-only view hides them and removes nothing.
    ro = store.with_read_only(True)
    assert await _keys(ro.list()) == [".zattrs", "c/0", "zarr.json"]
    assert stale_root.exists() and stale_c.exists()

    assert await _keys(store.list_dir("c")) == ["0"]
    assert not stale_c.exists(), "a stale temporary file is removed by the listing"
    assert young_c.exists(), "a young one may belong to a running writer"
    assert await _keys(store.list_prefix("c")) == ["c/0"]
    assert await _keys(store.list()) == [".zattrs", "c/0", "zarr.json"]
    assert not stale_root.exists()
    assert await _keys(store.list_dir("")) == [".zattrs", "c", "zarr.json"]

    assert store.sweep_partials() == []  # young_c is younger than an hour
    assert store.sweep_partials(max_age=0) == [f"c/.0.{'cd' * 16}.partial"]
    assert not young_c.exists()
    with pytest.raises(ValueError):
        ro.sweep_partials()


def test_temporary_file_names_are_hidden_by_pattern_not_by_dot():
    assert kz._is_partial(f".0.{'0' * 32}.partial")
    assert kz._is_partial(f".zarr.json.{'f' * 32}.partial")
    assert not kz._is_partial(".zarray")
    assert not kz._is_partial(f"0.{'0' * 32}.partial")  # no leading dot: a key
    assert not kz._is_partial(f".0.{'0' * 31}.partial")
