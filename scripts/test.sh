#!/usr/bin/env bash
# Runs every test that this machine can run, after scripts/bootstrap.sh:
#   1. the C++ suites (ctest; GPU-only tests skip visibly without a GPU)
#   2. the host suites again under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. the thread-pool and parallel-IO suites under ThreadSanitizer
#   4. formatting (clang-format)
#   5. an installed-package consumer built with find_package(kvikio), and the exported ABI
#   6. a build that links libstdc++ statically exports none of it (a GPU-machine crash)
#   7. the Python package: pip install . into a fresh virtual environment, then pytest
#   8. the documentation site (scripts/docs.sh): built with warnings as errors, examples run
#   9. the libFuzzer targets, 30 s each (scripts/fuzz.sh; FUZZ_SECONDS overrides)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
BUILD_DIR=${KVIKIO_BUILD_DIR:-build}
step() { echo; echo "=== $* ==="; }

step "C++ tests"
(cd "$BUILD_DIR" && ctest -j"$JOBS" --output-on-failure)

step "C++ host and remote tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVIKIO_SANITIZE=address,undefined \
  -DKVIKIO_BUILD_TOOLS=OFF >/dev/null
cmake --build build-asan -j"$JOBS"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions="$PWD/../tests/lsan.supp" ctest -j"$JOBS" -L "host|remote" --output-on-failure)

step "thread pool and parallel IO under ThreadSanitizer"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVIKIO_SANITIZE=thread \
  -DKVIKIO_BUILD_TOOLS=OFF >/dev/null
cmake --build build-tsan -j"$JOBS"
TSAN_SUPPRESSIONS="$PWD/tests/tsan.supp"  # absolute: the tests run in build-tsan/tests
(cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$TSAN_SUPPRESSIONS" ctest -j"$JOBS" -L "threads|io" --output-on-failure)

step "formatting"
git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run -Werror
echo "clang-format: clean"

step "install and build a consumer with find_package(kvikio)"
rm -rf build-install build-consumer
cmake --install "$BUILD_DIR" --prefix "$PWD/build-install" >/dev/null
cmake -S tests/consumer -B build-consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build-install" >/dev/null
cmake --build build-consumer
./build-consumer/consumer
# Programs written like upstream's cpp/examples, against the installed headers (issue 13).
cmake -S tests/compat/examples -B build-compat-examples -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build-install" >/dev/null
cmake --build build-compat-examples
./build-compat-examples/compat_no_cuda
# The CUDA one is compiled (and linked where libcudart is) above; it runs only with a GPU,
# in AUTO and OFF mode (OFF: cuFile, as upstream's examples use it; issue 24).
if [ -x build-compat-examples/compat_basic_io ] && nvidia-smi -L >/dev/null 2>&1; then
  for mode in AUTO OFF; do
    echo "compat examples with KVIKIO_COMPAT_MODE=$mode"
    KVIKIO_COMPAT_MODE=$mode ./build-compat-examples/compat_basic_io
    KVIKIO_COMPAT_MODE=$mode ./build-compat-examples/compat_no_cuda
  done
fi

step "the ABI: libkvikio.so exports the public API (KVIKIO_EXPORT) and nothing of detail::"
internal=$(nm -DC --defined-only "$BUILD_DIR/src/libkvikio.so" | grep -c ' kvikio::detail::' || true)
if [ "$internal" != 0 ]; then
  nm -DC --defined-only "$BUILD_DIR/src/libkvikio.so" | grep ' kvikio::detail::' | head
  echo "libkvikio.so exports $internal kvikio::detail symbols"; exit 1
fi
echo "libkvikio.so: $(nm -DC --defined-only "$BUILD_DIR/src/libkvikio.so" | wc -l) symbols exported, none of kvikio::detail"

step "a statically linked libstdc++ stays private to libkvikio.so"
# The GPU machine's default g++ links libstdc++ statically; exported, that copy mixed with the
# system one in any process that also imported CuPy, and crashed (see CMakeLists.txt).
cmake -S . -B build-static-libstdcxx -G Ninja -DKVIKIO_BUILD_TESTS=OFF -DKVIKIO_BUILD_TOOLS=OFF \
  -DCMAKE_SHARED_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
cmake --build build-static-libstdcxx -j"$JOBS"
exported=$(nm -DC --defined-only build-static-libstdcxx/src/libkvikio.so | grep -c 'std::locale' || true)
if [ "$exported" != 0 ]; then
  echo "libkvikio.so built with -static-libstdc++ exports $exported std::locale symbols"; exit 1
fi
echo "libkvikio.so built with -static-libstdc++: no libstdc++ internals exported"

step "Python package: pip install . and pytest"
rm -rf .venv
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q . pytest pytest-asyncio matplotlib "zarr>=3" "moto[server]==5.2.5" boto3 safetensors atheris \
  fsspec "dask[array]" distributed aiohttp xarray \
  -r docs/requirements.txt
.venv/bin/python -m pytest python/tests -rsx -q

step "documentation site: sphinx-build -W -n, then every example of the docs"
timeout 600 ./scripts/docs.sh

step "fuzzing: URL, S3/WebHDFS, response, settings and open-mode parsers"
FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/fuzz.sh
