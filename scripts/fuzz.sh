#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs each for a
# bounded time on its seed corpus; fails when any of them finds a crash or a broken invariant,
# after printing the finding and the input that reproduces it.
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   targets to run (default: all)
#   FUZZ_BUILD_DIR build directory (default build-fuzz)
# Reproduce a finding: build-fuzz/tests/fuzz/<target> <input file>
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
TARGETS=(${FUZZ_TARGETS:-fuzz_url fuzz_s3_url fuzz_webhdfs_url fuzz_response fuzz_settings fuzz_open_flags})

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (scripts/bootstrap.sh installs clang and libclang-rt-dev)"; exit 1
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKVIKIO_BUILD_FUZZERS=ON \
  -DKVIKIO_BUILD_TESTS=OFF -DKVIKIO_BUILD_TOOLS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${TARGETS[@]}"

if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer)
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=()
for t in "${TARGETS[@]}"; do
  # New inputs go to a working corpus in the build directory (kept between runs); the
  # committed seeds are only read.
  work="$BUILD_DIR/fuzz-corpus/$t" artifacts="$BUILD_DIR/fuzz-findings/$t"
  log="$BUILD_DIR/fuzz-findings/$t.log"
  rm -rf "$artifacts"; mkdir -p "$work" "$artifacts"
  echo "--- $t: ${SECONDS_EACH}s"
  if "$BUILD_DIR/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "tests/fuzz/corpus/$t" \
      >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^Done' "$log" | tail -1
  else
    failed+=("$t")
    echo "*** $t FAILED; the finding (full log: $log):"
    # Our invariant messages, the sanitizer's report and the input that reproduces it.
    grep -E '^\*\*\*|ERROR: |SUMMARY: |runtime error|^    #[0-9] |Test unit written' "$log" | head -40
    for f in "$artifacts"/*; do
      [ -f "$f" ] && { echo "input $f:"; head -c 512 "$f" | od -An -c | head -8; }
    done
  fi
done
# The Python target (kvikio.safetensors' header parser) runs under atheris where the Python
# environment has it (FUZZ_PYTHON, default .venv/bin/python); otherwise it is reported as skipped.
PY=${FUZZ_PYTHON:-.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import atheris, kvikio.safetensors" 2>/dev/null; then
  t=fuzz_safetensors_header work="$BUILD_DIR/fuzz-corpus/$t" artifacts="$BUILD_DIR/fuzz-findings/$t"
  rm -rf "$artifacts"; mkdir -p "$work" "$artifacts"
  echo "--- $t (atheris): ${SECONDS_EACH}s"
  if "$PY" tests/fuzz/$t.py -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts/" "$work" "tests/fuzz/corpus/$t" >"$artifacts.log" 2>&1; then
    grep -E '^Done|^#[0-9]+.*DONE' "$artifacts.log" | tail -1
  else
    failed+=("$t"); echo "*** $t FAILED:"; grep -E 'Error|assert|Traceback' "$artifacts.log" | head -20
  fi
else
  echo "--- fuzz_safetensors_header: skipped ($PY lacks atheris: pip install atheris)"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}"; exit 1
fi
echo "fuzz.sh: ${#TARGETS[@]} targets, ${SECONDS_EACH}s each, no findings"
