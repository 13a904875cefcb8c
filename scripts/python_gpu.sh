#!/usr/bin/env bash
# The Python package on the GPU machine, in one call: build and install it for that
# machine's Python (no network there: no build isolation), run the whole pytest suite
# (CuPy, Numba and PyTorch buffers included), then the benchmarks. Logs go to $OUT (or
# ./python-gpu-out); a short table is printed last.
#   scripts/python_gpu.sh [--no-cufile-fix]
# By default the machine's missing udev entry for the root disk is added first, so that
# cuFile's handle registration works (see GPU.md); --no-cufile-fix leaves AUTO to fall back.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/python-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
if [ "${1:-}" != "--no-cufile-fix" ] && [ "$(id -u)" -eq 0 ]; then
  mkdir -p /run/udev/data
  printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\nE:DEVTYPE=disk\n' >/run/udev/data/b254:0
fi

echo "=== build and install (pip, no build isolation) ==="
if ! python3 -m pip install --no-build-isolation --no-deps -q . >"$OUT/install.log" 2>&1; then
  tail -40 "$OUT/install.log"
  exit 1
fi
python3 - <<'PY' | tee "$OUT/info.txt"
import kvikio, kvikio.cufile_driver as d
print("kvikio", kvikio.__version__)
try:
    print("cuFile driver", d.get("major_version"), d.get("minor_version"),
          "| is_gds_available:", d.get("is_gds_available"))
except RuntimeError as e:
    print("cuFile driver not usable:", e)
PY

echo "=== pytest ==="
python3 -m pytest python/tests -q -rsx -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log"
pytest_rc=${PIPESTATUS[0]}

echo "=== benchmarks ==="
cd "$(mktemp -d)"
python3 -m kvikio.benchmarks.overhead | tee "$OUT/overhead.txt"
python3 -m kvikio.benchmarks.single_node_io --size 512MiB --threads 16 --repetitions 3 \
  --plot-threads 1,2,4,8,16 --plot "$OUT/single_node_io_host.png" 2>>"$OUT/bench.err" | tee "$OUT/bench_host.txt"
python3 -m kvikio.benchmarks.single_node_io --size 1GiB --threads 16 --repetitions 3 \
  --memory device 2>>"$OUT/bench.err" | tee "$OUT/bench_device.txt"

echo "=== summary ==="
cat "$OUT/info.txt"
tail -1 "$OUT/pytest.log"
cat "$OUT/overhead.txt" "$OUT/bench_host.txt" "$OUT/bench_device.txt"
exit "$pytest_rc"
