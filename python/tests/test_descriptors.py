"""File descriptors: none kept open after close, none taken from the process near its limit
(issue 23: reliability audit F5, F8, F11)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kvikio
import kvikio.defaults


def descriptors_of(path: str) -> int:
    """How many of this process's descriptors are open on `path`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == path:
                count += 1
        except OSError:
            pass  # the listing's own descriptor, closed meanwhile
    return count


@pytest.mark.parametrize("form", ["kvikio.pwrite_batch", "CuFile.pwrite_batch"])
def test_a_failed_batch_lets_close_close_the_file(form):
    """F8: a failed batch's future kept its files, so close() closed nothing (the descriptor
    stayed open until the future died, and its close(2) then went unchecked)."""
    f = kvikio.CuFile("/dev/full", "w")
    data = np.ones(8192, dtype=np.uint8)
    if form == "kvikio.pwrite_batch":
        future = kvikio.pwrite_batch([(f, data), (f, data, 100, 8192)])
    else:
        future = f.pwrite_batch([(data,), (data, 100, 8192)])
    with pytest.raises(OSError) as info:
        future.get()
    assert "/dev/full" in str(info.value)
    f.close()
    assert f.closed
    assert descriptors_of("/dev/full") == 0, "close() after a failed batch left the file open"
    del future


# F11: 12 threads reading one file each opened a descriptor of their own, with a budget that
# ignored how many the process used: 6 descriptors left free were all taken, and the
# process's next open failed with EMFILE.
_STARVE = textwrap.dedent(
    """
    import os, resource, sys, threading
    import numpy as np
    import kvikio, kvikio.defaults

    path = sys.argv[1]
    data = np.random.default_rng(11).integers(0, 256, 1 << 20, dtype=np.uint8)
    with open(path, "wb") as out:
        out.write(data.tobytes())
    resource.setrlimit(resource.RLIMIT_NOFILE, (96, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    f = kvikio.CuFile(path, "r")
    held = []
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    for _ in range(6):
        os.close(held.pop())
    errors = []

    def reader(i):
        out = np.empty(4096, dtype=np.uint8)
        try:
            for k in range(50):
                off = ((i * 50 + k) * 4096) % data.nbytes
                assert f.read(out, file_offset=off) == 4096
                assert out.tobytes() == data[off:off + 4096].tobytes()
        except BaseException as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mine = []
    try:
        for _ in range(6):
            mine.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as e:
        errors.append(f"the process's own open failed after {len(mine)} of 6: {e}")
    f.close()
    print("ERRORS", errors)
    """
)


def test_hidden_descriptors_never_take_the_processs_last_ones(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", _STARVE, str(tmp_path / "starve.bin")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ERRORS []" in result.stdout, result.stdout[-3000:]


async def test_get_partial_values_opens_each_key_once_and_few_at_a_time(tmp_path):
    """F5: get_partial_values opened one CuFile per (key, range) pair, all at once: 400 ranges
    of one shard took 400 descriptors and failed with EMFILE where LocalStore succeeds."""
    pytest.importorskip("zarr", minversion="3")
    from zarr.abc.store import RangeByteRequest
    from zarr.core.buffer import default_buffer_prototype

    from kvikio.zarr import GDSStore

    rng = np.random.default_rng(5)
    shard = rng.integers(0, 256, (1 << 20) + 17, dtype=np.uint8).tobytes()
    (tmp_path / "shard").write_bytes(shard)
    (tmp_path / "c").mkdir()
    chunks = {}
    for i in range(300):
        chunks[f"c/{i}"] = rng.integers(0, 256, int(rng.integers(1, 5000)), dtype=np.uint8).tobytes()
        (tmp_path / "c" / str(i)).write_bytes(chunks[f"c/{i}"])
    pairs, expected = [], []
    for _ in range(400):
        start = int(rng.integers(0, len(shard)))
        end = start + int(rng.integers(0, 40000))
        pairs.append(("shard", RangeByteRequest(start, end)))
        expected.append(shard[start:end])
    for key, value in chunks.items():
        pairs.append((key, None))
        expected.append(value)
    pairs.append(("missing", None))
    expected.append(None)
    order = rng.permutation(len(pairs))
    pairs = [pairs[i] for i in order]
    expected = [expected[i] for i in order]

    store = await GDSStore.open(root=tmp_path, read_only=True)
    used = len(os.listdir("/proc/self/fd"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Room for a group of files and the pool's descriptors, far from one per pair.
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 150, hard))
    try:
        with kvikio.defaults.set({"num_threads": 4}):
            got = await store.get_partial_values(default_buffer_prototype(), pairs)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [None if g is None else g.to_bytes() for g in got] == expected
    assert len(os.listdir("/proc/self/fd")) <= used + 1
