"""Offsets and sizes >= 2**63 are "too large", not "negative" (reliability audit #14)."""

from __future__ import annotations

import numpy as np
import pytest

import kvikio

@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, 2**100])
@pytest.mark.parametrize("method", ["read", "pread", "write", "pwrite"])
def test_huge_arguments_are_too_large_not_negative(tmp_path, method, value):
    """Regression #14: 2**63 was reported as "must not be negative"."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"0123456789abcdef")
    buf = np.zeros(4, dtype=np.uint8)
    with kvikio.CuFile(path, "r+") as f:
        fn = getattr(f, method)
        for arg in ("file_offset", "size", "task_size"):
            with pytest.raises(OverflowError, match=rf"^{arg} {value} is too large") as e:
                fn(buf, **{arg: value})
            assert "negative" not in str(e.value)
    assert path.read_bytes() == b"0123456789abcdef"  # 2**64-1 never meant "no offset"


@pytest.mark.parametrize("value", [-1, -(2**63), -(2**63) - 1, -(2**70)])
def test_negative_arguments_still_must_not_be_negative(tmp_path, value):
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        with pytest.raises(OverflowError, match=rf"^file_offset must not be negative, got {value}$"):
            f.write(b"x", file_offset=value)
        with pytest.raises(OverflowError, match=rf"^size must not be negative, got {value}$"):
            f.read(bytearray(1), size=value)


def test_largest_offset_is_passed_on(tmp_path):
    """2**63-1 is a valid argument: it reaches the IO (which reports the read past the end)."""
    with kvikio.CuFile(tmp_path / "f.bin", "w+") as f:
        with pytest.raises(Exception) as e:
            f.read(bytearray(1), file_offset=2**63 - 1)
        assert "too large" not in str(e.value) and "negative" not in str(e.value)
