"""Batches of reads and writes: CuFile.pread_batch/pwrite_batch and kvikio.pread_batch/
pwrite_batch across files, through both backends (issue 14)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

import kvikio
import kvikio.defaults

BACKENDS = ["io_uring", "thread_pool"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    kvikio.defaults.set({"batch_backend": request.param, "num_threads": 3})
    if kvikio._lib.batch_backend() != request.param:
        pytest.skip(f"{request.param} is not available here")
    return request.param


def ranges(rng, n, file_size):
    out = []
    for _ in range(n):
        size = int(rng.integers(0, 20001))
        out.append((int(rng.integers(0, file_size - size + 1)), size))
    return out


def test_pread_batch_reads_every_request_byte_for_byte(tmp_path, backend, rng, random_bytes):
    data = random_bytes(2 * 1024 * 1024 + 131)
    path = tmp_path / "a.bin"
    data.tofile(path)
    rs = ranges(rng, 200, data.size)
    bufs = [np.full(size, 7, dtype=np.uint8) for _, size in rs]
    with kvikio.CuFile(path, "r") as f:
        fut = f.pread_batch([(b, b.nbytes, off) for b, (off, _) in zip(bufs, rs)])
        assert fut.get() == sum(size for _, size in rs)
    for b, (off, size) in zip(bufs, rs):
        np.testing.assert_array_equal(b, data[off : off + size])


def test_pwrite_batch_writes_whole_buffers_when_size_is_none(tmp_path, backend, random_bytes):
    data = random_bytes(300_001)
    pieces = [(data[o : o + 7777], None, o) for o in range(0, data.size, 7777)]
    with kvikio.CuFile(tmp_path / "out.bin", "w") as f:
        assert f.pwrite_batch(reversed(pieces)).get() == data.size
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", dtype=np.uint8), data)


def test_batches_across_files(tmp_path, backend, rng, random_bytes):
    contents = [random_bytes(100_000 + 4099 * k) for k in range(3)]
    files = []
    for k, c in enumerate(contents):
        c.tofile(tmp_path / f"in{k}")
        files.append(kvikio.CuFile(tmp_path / f"in{k}", "r"))
    rs = ranges(rng, 60, 100_000)
    bufs = [np.empty(size, dtype=np.uint8) for _, size in rs]
    fut = kvikio.pread_batch([(files[i % 3], b, None, off) for i, (b, (off, _)) in enumerate(zip(bufs, rs))])
    assert fut.get() == sum(size for _, size in rs)
    for i, (b, (off, size)) in enumerate(zip(bufs, rs)):
        np.testing.assert_array_equal(b, contents[i % 3][off : off + size])
    outs = [kvikio.CuFile(tmp_path / f"out{k}", "w") for k in range(3)]
    assert kvikio.pwrite_batch([(outs[k], c, None, 0) for k, c in enumerate(contents)]).get() == sum(
        c.size for c in contents
    )
    for k, c in enumerate(contents):
        outs[k].close()
        files[k].close()
        np.testing.assert_array_equal(np.fromfile(tmp_path / f"out{k}", dtype=np.uint8), c)


def test_reads_past_the_end_give_a_short_count(tmp_path, backend, random_bytes):
    data = random_bytes(5000)
    data.tofile(tmp_path / "s.bin")
    a = np.zeros(4096, dtype=np.uint8)
    b = np.full(4096, 9, dtype=np.uint8)
    c = np.full(10, 9, dtype=np.uint8)
    with kvikio.CuFile(tmp_path / "s.bin", "r") as f:
        assert f.pread_batch([(a, None, 0), (b, None, 4000), (c, None, 9000)]).get() == 4096 + 1000
    np.testing.assert_array_equal(a, data[:4096])
    np.testing.assert_array_equal(b[:1000], data[4000:])
    assert (b[1000:] == 9).all() and (c == 9).all()


def test_empty_batch_is_ready_with_zero(tmp_path, backend):
    with kvikio.CuFile(tmp_path / "e.bin", "w+") as f:
        assert f.pread_batch([]).get() == 0
        assert f.pwrite_batch([]).get() == 0
    assert kvikio.pread_batch([]).get() == 0


def test_a_bad_request_is_rejected_by_index_before_any_io(tmp_path, backend):
    (tmp_path / "r.bin").write_bytes(b"x" * 8192)
    buf = np.zeros(100, dtype=np.uint8)
    with kvikio.CuFile(tmp_path / "r.bin", "r") as ro, kvikio.CuFile(tmp_path / "w.bin", "w") as out:
        with pytest.raises(ValueError, match="batch request 1: cannot write to .*read-only"):
            kvikio.pwrite_batch([(out, buf, None, 0), (ro, buf, None, 0)])
        assert out.nbytes() == 0
        closed = kvikio.CuFile(tmp_path / "c.bin", "w")
        closed.close()
        with pytest.raises(ValueError, match="batch request 2: I/O operation on closed file"):
            kvikio.pread_batch([(ro, buf, None, 0), (ro, buf, None, 0), (closed, buf, None, 0)])
        with pytest.raises(TypeError, match="batch request 0: expected a kvikio.CuFile"):
            kvikio.pread_batch([("r.bin", buf, None, 0)])
        with pytest.raises(TypeError, match=r"batch request 1: expected \(buf"):
            ro.pread_batch([(buf,), (buf, 1, 2, 3)])
        with pytest.raises(ValueError):
            ro.pread_batch([(bytes(10), None, 0)])  # read into a read-only buffer


def test_an_error_in_the_middle_reports_the_first_after_every_request(tmp_path, backend, random_bytes):
    data = random_bytes(3 * 65536)
    with kvikio.CuFile("/dev/full", "w") as full, kvikio.CuFile(tmp_path / "ok.bin", "w") as out:
        fut = kvikio.pwrite_batch(
            [
                (out, data[:65536], None, 0),
                (full, data[:1000], None, 0),
                (out, data[65536:131072], None, 65536),
                (full, data[:1000], None, 8192),
                (out, data[131072:], None, 131072),
            ]
        )
        with pytest.raises(OSError) as e:
            fut.get()
        assert e.value.errno == errno.ENOSPC
        assert "'/dev/full' at offset 0 " in str(e.value)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "ok.bin", dtype=np.uint8), data)


def test_the_batch_backend_setting(monkeypatch):
    with pytest.raises(ValueError, match="one of auto io_uring thread_pool"):
        kvikio.defaults.set("batch_backend", "uring")
    kvikio.defaults.set("batch_backend", "thread_pool")
    assert kvikio.defaults.get("batch_backend") == "thread_pool"
    assert kvikio._lib.batch_backend() == "thread_pool"


def test_device_batch_round_trip(tmp_path, cupy, random_bytes):
    data = random_bytes(1_000_003)
    data.tofile(tmp_path / "d.bin")
    rs = [(0, 4096), (4097, 100_000), (999_000, 1003), (12345, 0)]
    bufs = [cupy.zeros(size, dtype=cupy.uint8) for _, size in rs]
    with kvikio.CuFile(tmp_path / "d.bin", "r") as f:
        assert f.pread_batch([(b, None, off) for b, (off, _) in zip(bufs, rs)]).get() == sum(s for _, s in rs)
    for b, (off, size) in zip(bufs, rs):
        np.testing.assert_array_equal(cupy.asnumpy(b), data[off : off + size])
