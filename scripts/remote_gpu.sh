#!/usr/bin/env bash
# RemoteFile and `kvikio bench --remote` on the GPU machine, in one call: build the Python
# package and the tool for that machine, run the remote Python tests (CuPy buffers included;
# S3 ones skip there, moto is not installed), then the remote benchmark against nginx and
# the Python range server on loopback (REMOTE_BENCH_SIZE bytes, default 2GiB). Logs go to
# $OUT (or ./remote-gpu-out).
#
# That machine has libcurl.so.4 but no curl headers and no nginx: carry them unpacked in
# .deps/root (git-ignored), made here with
#   mkdir -p .deps && cd .deps && apt-get download libcurl4-openssl-dev nginx &&
#   for f in *.deb; do dpkg -x "$f" root; done
# and name ".deps" in the device tool's `carry`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/remote-gpu-out}
mkdir -p "$OUT"
DEPS=$PWD/.deps/root
export PATH=$DEPS/usr/sbin:$PATH PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
curl_lib=$(ls /usr/lib/x86_64-linux-gnu/libcurl.so.4 2>/dev/null || true)
export CMAKE_ARGS="-DCURL_INCLUDE_DIR=$DEPS/usr/include/x86_64-linux-gnu -DCURL_LIBRARY=$curl_lib"

echo "=== build: Python package and the kvikio tool ==="
if ! python3 -m pip install --no-build-isolation --no-deps -q . >"$OUT/install.log" 2>&1; then
  tail -40 "$OUT/install.log"
  exit 1
fi
if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVIKIO_BUILD_TESTS=OFF \
         $CMAKE_ARGS && cmake --build build-gpu --target kvikio_tool; } >"$OUT/tool.log" 2>&1; then
  tail -40 "$OUT/tool.log"
  exit 1
fi

echo "=== pytest (remote) ==="
python3 -m pytest python/tests/test_remote.py python/tests/test_seed_examples.py \
  python/tests/test_misc.py -q -rsx -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log"
pytest_rc=${PIPESTATUS[0]}

echo "=== kvikio bench --remote local ==="
SIZE=${REMOTE_BENCH_SIZE:-2GiB}
{
  for t in 1 4 16; do
    build-gpu/tools/kvikio bench --remote local --size $SIZE --threads $t --repetitions 5
  done
  build-gpu/tools/kvikio bench --remote local --size $SIZE --threads 16 --task-size 16MiB --repetitions 5
  build-gpu/tools/kvikio bench --remote local --remote-server python --size $SIZE --threads 16 --repetitions 3
} 2>>"$OUT/bench.err" | tee "$OUT/bench.txt"

echo "=== summary ==="
tail -1 "$OUT/pytest.log"
cat "$OUT/bench.txt"
exit "$pytest_rc"
