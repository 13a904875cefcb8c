"""Issue 13: deleting kvikio* from sys.modules and importing again must not abort the
process (nanobind registers types and enums once per process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_reimport_in_the_same_process(tmp_path):
    path = tmp_path / "d.bin"
    path.write_bytes(bytes(range(256)) * 64)
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import kvikio
        first = kvikio
        for round in range(3):
            for name in [m for m in sys.modules if m == "kvikio" or m.startswith("kvikio.")]:
                del sys.modules[name]
            import kvikio
            assert kvikio is not first
            assert kvikio.CompatMode.ON.name == "ON"
            out = np.empty(256 * 64, np.uint8)
            with kvikio.CuFile({str(path)!r}, "r") as f:
                assert f.read(out) == out.nbytes
            assert out.tobytes() == bytes(range(256)) * 64
            try:
                kvikio.CuFile({str(tmp_path / "absent")!r})
            except FileNotFoundError as e:
                # The errors come from the package now imported, not the first one.
                assert isinstance(e, kvikio.errors.KvikioFileNotFoundError), type(e)
                assert isinstance(e, RuntimeError)
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    assert r.stdout.strip() == "ok"
