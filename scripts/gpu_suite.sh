#!/usr/bin/env bash
# Builds kvikio on the GPU machine and runs the whole C++ suite (host tests, the device tests
# against the stand-in driver and against the real GPU) in both cuFile states:
#   A: as the machine comes (cuFileHandleRegister fails without a udev database: AUTO must
#      fall back to POSIX per file, OFF must raise);
#   B: with the udev fix of GPU.md (registration works: the cuFile path is exercised).
# Then the device-memory benchmark (4 GiB file, 16 threads). Logs go to $OUT; a short table
# is printed last.
#
# usage: OUT=/some/dir [GTEST_SRC=/path/to/googletest] scripts/gpu_suite.sh
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/gpu-out}
mkdir -p "$OUT"
JOBS=$(nproc)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

# Build where O_DIRECT works (not tmpfs): the tests create their files in the build tree.
BUILD=${BUILD:-/tmp/kvikio-gpu-build}
if [ "$(stat -f -c %T /tmp 2>/dev/null)" = "tmpfs" ]; then BUILD=$SRC/build-gpu; fi
mkdir -p "$BUILD"

{
  date; uname -a; nvidia-smi; df -h "$BUILD" /tmp; lsblk; findmnt -T "$BUILD"
  ls -l /usr/local/cuda/lib64/libcufile* 2>&1; ldconfig -p | grep -E 'libcuda|libcufile'
} > "$OUT/env.log" 2>&1

# GoogleTest: installed, or built from source (carried, or /usr/src/googletest).
PREFIX_PATH=""
if ! ls /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake > /dev/null 2>&1; then
  GTEST_SRC=${GTEST_SRC:-/usr/src/googletest}
  if [ ! -f "$GTEST_SRC/CMakeLists.txt" ]; then
    note "FATAL: no GoogleTest (set GTEST_SRC to its source)"; exit 1
  fi
  cmake -S "$GTEST_SRC" -B /tmp/gtest-build -DCMAKE_INSTALL_PREFIX=/tmp/gtest \
    -DBUILD_GMOCK=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
    cmake --build /tmp/gtest-build -j"$JOBS" --target install >> "$OUT/build.log" 2>&1 ||
    { note "FATAL: GoogleTest build failed"; tail -30 "$OUT/build.log"; exit 1; }
  PREFIX_PATH=/tmp/gtest
fi

GEN=""
command -v ninja > /dev/null && GEN="-G Ninja"
t0=$(date +%s)
# shellcheck disable=SC2086
if ! { cmake -S "$SRC" -B "$BUILD" $GEN -DKVIKIO_WARNINGS_AS_ERRORS=ON \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$PREFIX_PATH" \
         -DCMAKE_CXX_FLAGS="-Wno-error=dangling-reference" &&
       cmake --build "$BUILD" -j"$JOBS"; } >> "$OUT/build.log" 2>&1; then
  note "FATAL: build failed"; tail -40 "$OUT/build.log"; exit 1
fi
note "build: ok in $(( $(date +%s) - t0 )) s, $(grep -c 'warning:' "$OUT/build.log") warnings (GCC 13 dangling-reference kept as warnings)"

# The device the build tree lives on, for the udev fix.
DEV=$(findmnt -no MAJ:MIN -T "$BUILD" | head -1)
udev_fix() {
  mkdir -p /run/udev/data
  for d in "$DEV" 254:0; do
    printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\nE:DEVTYPE=disk\n' > "/run/udev/data/b$d"
  done
}
udev_unfix() { for d in "$DEV" 254:0; do rm -f "/run/udev/data/b$d"; done; }

run_suite() {  # $1: state name
  local log=$OUT/ctest_$1.log
  # Each test process pays the CUDA and cuFile driver start (about 3 s there): run many.
  # SUITE_CTEST_ARGS narrows the run (e.g. "-L gpu"); by default everything runs.
  # shellcheck disable=SC2086
  (cd "$BUILD" && timeout 400 ctest -j"$JOBS" --output-on-failure --timeout 120 ${SUITE_CTEST_ARGS:-}) > "$log" 2>&1
  local rc=$?
  local line passed failed skipped
  line=$(grep -E 'tests passed' "$log" | tail -1)
  skipped=$(grep -c -- '(Skipped)' "$log")
  failed=$(sed -n '/The following tests FAILED/,$p' "$log" | grep -c -E '^\s+[0-9]+ - ')
  note "ctest [$1]: rc=$rc  $line  skipped=$skipped  failed=$failed"
  # Per group of tests: passed / skipped (GPU tests skip visibly without a GPU).
  local group
  for group in "gpu\\." "standin\\." "shim\\."; do
    local p k
    p=$(grep -E "Test +#[0-9]+: $group" "$log" | grep -c ' Passed ')
    k=$(grep -E "Test +#[0-9]+: $group" "$log" | grep -c 'Skipped')
    note "   ${group%%\\*}: passed=$p skipped=$k"
  done
  sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ - ' | head -20 | tee -a "$SUMMARY"
  [ -f "$BUILD/tests/cufile.log" ] && tail -20 "$BUILD/tests/cufile.log" > "$OUT/cufile_$1.log"
}

udev_unfix
run_suite no_udev
udev_fix
run_suite udev

# Benchmark: 4 GiB, 16 threads, with the udev fix in place (so the cuFile row runs too).
BENCH_FILE=$BUILD/bench-4g.bin
(cd "$BUILD" && timeout 300 ./tests/kvikio_device_bench "$BENCH_FILE" 4096 16) > "$OUT/bench.log" 2>&1
note "bench: rc=$?"
rm -f "$BENCH_FILE"

echo
echo "================ summary ================"
cat "$SUMMARY"
grep -E '^RESULT|^lib' "$OUT/bench.log" | sed 's/^RESULT //'
