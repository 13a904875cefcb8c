"""GDSStore durability (reliability audit #5 a and c): the temporary file is fsync'ed before
the rename and the directory after it; temporary files are never listed and stale ones are
swept; and a writer killed at random points leaves every chunk with its old or its new value.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
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


# -- crash consistency: SIGKILL at random points ---------------------------------------------

CHUNK = 64 * 1024  # uint32 items per chunk (256 KiB)
NCHUNKS = 6


def _values(chunk: int, generation: int) -> np.ndarray:
    """Chunk `chunk`'s contents in `generation` (0 or 1): distinct for every pair."""
    i = np.arange(CHUNK, dtype=np.uint64)
    v = i * 2654435761 + chunk * 1000003 + generation * 0x9E3779B9 + 1
    return (v % (1 << 32)).astype(np.uint32)


async def _all_keys(store: GDSStore) -> list[str]:
    await store._open()
    return [k async for k in store.list()]


WRITER = textwrap.dedent(
    f"""
    import sys
    import numpy as np
    import zarr
    from kvikio.zarr import GDSStore
    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
    from test_zarr_durability import CHUNK, NCHUNKS, _values

    arr = zarr.open_array(GDSStore(sys.argv[1]), mode="r+")
    values = [[_values(c, g) for c in range(NCHUNKS)] for g in (0, 1)]
    print("ready", flush=True)
    g = 1
    while True:
        for c in range(NCHUNKS):
            arr[c * CHUNK : (c + 1) * CHUNK] = values[g][c]
        g ^= 1
    """
)


def test_killed_writer_leaves_old_or_new_chunks(tmp_path):
    """Issue 12: SIGKILL a writer at seeded random points; every chunk then holds its old
    or its new value exactly, the store opens, and no temporary file is listed."""
    root = tmp_path / "store"
    arr = zarr.create_array(
        GDSStore(root),
        shape=(NCHUNKS * CHUNK,),
        chunks=(CHUNK,),
        dtype="uint32",
        compressors=None,
        fill_value=0,  # a missing chunk would read as zeros: neither old nor new
    )
    arr[:] = np.concatenate([_values(c, 0) for c in range(NCHUNKS)])
    expected = [(_values(c, 0), _values(c, 1)) for c in range(NCHUNKS)]

    rng = np.random.default_rng(1212)
    generations_seen = set()
    partials_seen = 0
    deadline = time.monotonic() + 12
    iterations = 0
    while iterations < 3 or (iterations < 5 and time.monotonic() < deadline):
        iterations += 1
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = proc.stdout.readline()
            assert line.strip() == "ready", proc.stderr.read()
            time.sleep(float(rng.uniform(0.02, 0.5)))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL, "the writer must still be running when killed"

        partials_seen += sum(1 for p in root.rglob("*") if kz._is_partial(p.name))
        store = GDSStore(root, read_only=True)
        listed = asyncio.run(_all_keys(store))
        assert not [k for k in listed if kz._is_partial(k.rsplit("/", 1)[-1])]
        assert sorted(listed) == sorted(["zarr.json"] + [f"c/{c}" for c in range(NCHUNKS)])

        data = zarr.open_array(store, mode="r")[:]
        for c, (old, new) in enumerate(expected):
            got = data[c * CHUNK : (c + 1) * CHUNK]
            if np.array_equal(got, old):
                generations_seen.add(0)
            elif np.array_equal(got, new):
                generations_seen.add(1)
            else:
                pytest.fail(f"iteration {iterations}: chunk {c} holds neither its old nor its new value")
    assert iterations >= 3
    assert 1 in generations_seen, "the writer never got a chunk written: the kills came too early"
    print(f"{iterations} kills, {partials_seen} temporary files left behind (hidden)")
