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
