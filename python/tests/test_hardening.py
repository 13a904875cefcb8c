"""Regression tests for reliability-audit findings fixed in the C++ library, as Python sees
them (reference/reliability-audit.md; each test names its finding)."""

from __future__ import annotations

import errno
import multiprocessing
import os

import numpy as np
import pytest

import kvikio
import kvikio.defaults


def test_close_reports_a_failing_close_as_oserror(tmp_path):
    """Audit #5(b): a failing close(2) was swallowed; io.FileIO.close() raises OSError."""
    path = tmp_path / "close.bin"
    f = kvikio.CuFile(path, "w")
    os.close(f.fileno())  # the descriptor vanishes behind the handle's back: EBADF
    with pytest.raises(OSError, match="close.bin") as info:
        f.close()
    assert info.value.errno == errno.EBADF
    assert f.closed
    f.close()  # idempotent, and silent once closed


def test_fsync_flushes_and_refuses_a_closed_file(tmp_path):
    path = tmp_path / "sync.bin"
    data = np.arange(10000, dtype=np.uint32)
    with kvikio.CuFile(path, "w") as f:
        f.write(data)
        f.fsync()
    assert path.read_bytes() == data.tobytes()
    with pytest.raises(ValueError, match="closed"):
        f.fsync()


def _child_reads(path: str, expected: bytes, queue) -> None:
    out = np.zeros(len(expected), dtype=np.uint8)
    with kvikio.CuFile(path, "r") as f:
        n = f.pread(out, task_size=64 * 1024).get()
    queue.put((n, out.tobytes() == expected))


def test_pread_in_a_forked_child_after_the_parent_used_the_pool(tmp_path):
    """Audit #4: the child's IOFuture.get() never returned (the pool had no threads)."""
    data = np.random.default_rng(4).integers(0, 256, 3 * 2**20 + 5, dtype=np.uint8)
    path = tmp_path / "fork.bin"
    path.write_bytes(data.tobytes())
    with kvikio.defaults.set({"num_threads": 4}):
        out = np.zeros_like(data)
        with kvikio.CuFile(path, "r") as f:
            assert f.pread(out, task_size=64 * 1024).get() == data.nbytes
        np.testing.assert_array_equal(out, data)
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        proc = ctx.Process(target=_child_reads, args=(str(path), data.tobytes(), queue))
        proc.start()
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()
            pytest.fail("the forked child hung")
        assert proc.exitcode == 0
        assert queue.get(timeout=5) == (data.nbytes, True)


def test_tiny_task_size_reads_in_bounded_memory(tmp_path):
    """Audit #10: task_size=1 queued one task per byte (about 150 bytes of memory each)."""
    data = np.random.default_rng(10).integers(0, 256, 64 * 2**20, dtype=np.uint8)
    path = tmp_path / "tiny.bin"
    path.write_bytes(data.tobytes())
    out = np.zeros_like(data)
    with kvikio.defaults.set({"num_threads": 4}):
        with kvikio.CuFile(path, "r") as f:
            assert f.pread(out, task_size=1).get() == data.nbytes
    np.testing.assert_array_equal(out, data)
