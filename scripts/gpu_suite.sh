#!/usr/bin/env bash
# Everything that needs a GPU, in one call on the GPU machine (see shared GPU.md):
#   1. builds the C++ library, tests and tool, and the Python package, for that machine;
#   2. runs the GPU C++ tests in both cuFile states:
#        no_udev: as the machine comes (cuFileHandleRegister fails without a udev database:
#                 AUTO must fall back to POSIX per file, OFF must raise);
#        udev:    with GPU.md's udev fix (registration works: the cuFile path runs);
#      plus the remote reads into device memory;
#   3. runs the whole pytest suite (CuPy, Numba, PyTorch buffers, zarr with GPU buffers);
#   4. benchmarks: kvikio bench --memory device (4 GiB, 16 threads, hot page cache, POSIX
#      pipeline and cuFile; cold Direct IO), the Python-layer overhead and the zarr read,
#      and the zarr read and a small open-read-close against upstream KvikIO's wheel;
#   4b. (GPU_SUITE_BEFORE_AFTER=1 only) before/after: the same device bench with the tool built from .gpu-deps/before (a
#      `git archive` of an earlier commit: src include tools cmake CMakeLists.txt), the two
#      tools taking turns, each figure a ratio to the limit measured in its own run;
#   5. only with 2+ GPUs (nvidia-smi -L): the multi-GPU tests and kvikio bench --devices 0,1;
#   6. the Python package built again with the image's own compiler (CXX=/opt/gcc/bin/g++,
#      which links libstdc++ statically), then the CuPy and cuFile tests with that build.
# Logs go to $OUT/logs.tgz (the device tool brings back at most 8 files) beside summary.txt;
# a short table is printed last. Every step has a time limit, so the summary always comes back.
#
# What that machine lacks travels in git-ignored folders named in the device tool's carry:
#   .deps/root       curl headers: apt-get download libcurl4-openssl-dev; dpkg -x *.deb root
#                    (and liburing-dev's, likewise, for the io_uring batches)
#   .gpu-deps/googletest   GoogleTest source (apt-get download googletest; dpkg -x)
#   .gpu-deps/before an earlier commit's sources, for step 4b (optional)
#   .gpu-deps/upstream upstream KvikIO's wheels for the side-by-side step (optional):
#                    kvikio_cu13, libkvikio_cu13, rapids_logger, cuda_pathfinder
#   .gpu-deps/zarr31 zarr 3.1.6's wheel (pip download --no-deps zarr==3.1.6): the zarr both
#                    stores run under in the upstream comparison (upstream wants zarr < 3.2)
#   .gpu-deps/nginx  nginx for the remote random-range bench (stage random): apt-get download
#                    nginx; dpkg -x into it; libpcre2-8.so.0 and libcrypt.so.1 copied to lib/
#   .gpu-deps/seed   the specification (shared/seed), whose examples test_seed_examples.py runs
#   .whl             wheels for zarr>=3 and what it needs, pytest-asyncio, and moto 5.2.5 with
#                    what its S3 server needs there (boto3, botocore, s3transfer, jmespath,
#                    xmltodict, responses, cryptography, cffi, pycparser, flask, flask-cors,
#                    blinker, itsdangerous, py-partiql-parser), so the S3 tests and the seed's
#                    S3 examples run with CuPy buffers too
set -u
# GPU_SUITE_STAGES: any of "tests" (steps 2, 3), "bench" (4, 4b, 5), "compare" (4's upstream
# comparison alone), "random" (4's small-read benches alone, and benchmarks.fsspec_io), "many"
# (many requests in flight, against upstream), "checkpoint" (4c: the safetensors loader),
# "dask" (benchmarks.dask_io, LocalCUDACluster) and "image" (6); default
# "tests bench". One stage per call fits the device tool's 10 minutes; each builds first
# (incrementally when the machine is still warm).
STAGES=${GPU_SUITE_STAGES:-tests bench}
stage() { [[ " $STAGES " == *" $1 "* ]]; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
RESULTS=${OUT:-$SRC/gpu-out}
mkdir -p "$RESULTS"
OUT=$(mktemp -d /tmp/gpu-logs.XXXXXX)  # every log; packed into $RESULTS/logs.tgz on exit
trap 'tar czf "$RESULTS/logs.tgz" -C "$OUT" . && cp "$SUMMARY" "$RESULTS/"' EXIT
JOBS=$(nproc)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
# That machine's default compiler (CXX=/opt/gcc/bin/g++) links libstdc++ statically, so
# libkvikio.so would carry and export a private libstdc++; a Python process that then loads
# the system one (import cupy) crashes in its locale set-up. The system g++ links it shared.
IMAGE_CXX=${CXX:-}
if [ -x /usr/bin/g++ ]; then export CC=/usr/bin/gcc CXX=/usr/bin/g++; fi

# Build where O_DIRECT works (not tmpfs): the tests create their files in the build tree.
BUILD=${BUILD:-/var/tmp/kvikio-gpu-build}
mkdir -p "$BUILD"
{
  date; nvidia-smi; df -h "$BUILD"; lsblk; findmnt -T "$BUILD"
  ldconfig -p | grep -E 'libcuda|libcufile|libcurl'
} > "$OUT/env.log" 2>&1

# --- what the machine lacks ---------------------------------------------------------------
CURL_ARGS=()
if [ ! -f /usr/include/curl/curl.h ] && [ -d "$SRC/.deps/root" ]; then
  CURL_ARGS=(-DCURL_INCLUDE_DIR="$SRC/.deps/root/usr/include/x86_64-linux-gnu"
             -DCURL_LIBRARY=/usr/lib/x86_64-linux-gnu/libcurl.so.4)
fi
# liburing (io_uring batches): its headers and static library, from `apt-get download
# liburing-dev; dpkg -x *.deb root`, when the machine has none (else batches take the pool).
if [ ! -f /usr/include/liburing.h ] && [ -f "$SRC/.deps/root/usr/include/liburing.h" ]; then
  CURL_ARGS+=(-DKVIKIO_LIBURING_INCLUDE_DIR="$SRC/.deps/root/usr/include"
              -DKVIKIO_LIBURING_STATIC="$SRC/.deps/root/usr/lib/x86_64-linux-gnu/liburing.a")
fi
PREFIX_PATH=""
if ! ls /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake > /dev/null 2>&1; then
  GTEST_SRC=${GTEST_SRC:-$SRC/.gpu-deps/googletest}
  [ -f "$GTEST_SRC/CMakeLists.txt" ] || GTEST_SRC=/usr/src/googletest
  { cmake -S "$GTEST_SRC" -B /tmp/gtest-build -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DBUILD_GMOCK=OFF \
      -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/gtest-build --target install; } \
    > "$OUT/build.log" 2>&1 || { note "FATAL: GoogleTest build failed"; tail -30 "$OUT/build.log"; exit 1; }
  PREFIX_PATH=/tmp/gtest
fi
SEED=$(ls "$SRC"/.gpu-deps/seed/*.txt 2>/dev/null | head -1)
[ -n "$SEED" ] && export KVIKIO_SEED_PATH=$SEED
if [ -d "$SRC/.whl" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$SRC"/.whl/*.whl >> "$OUT/build.log" 2>&1
  export PYTHONPATH=/tmp/site
fi

# Upstream KvikIO's wheels (kvikio-cu13, libkvikio-cu13, and rapids-logger and cuda-pathfinder
# that libkvikio loads) in a folder of their own, and $UPY: python3 with that folder first on
# PYTHONPATH. Not a venv: python3 there is itself a venv (/opt/torch/.venv), whose NumPy and
# CuPy a second venv's --system-site-packages would not see. Upstream 26.10 supports zarr <
# 3.2: its comparisons run zarr 3.1.6 (.gpu-deps/zarr31, in $ZARR31).
setup_upstream() {
  UPSITE=/tmp/kvikio-upstream-site ZARR31=/tmp/zarr31 UPY=/tmp/kvikio-upstream-python
  if [ ! -x "$UPY" ]; then
    { python3 -m pip install -q --no-index --no-deps --no-compile --target "$UPSITE" \
        "$SRC"/.gpu-deps/upstream/*.whl && \
      python3 -m pip install -q --no-index --no-deps --no-compile --target "$ZARR31" \
        "$SRC"/.gpu-deps/zarr31/*.whl; } > "$OUT/upstream.log" 2>&1
    printf '#!/bin/sh\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec python3 "$@"\n' "$UPSITE" > "$UPY"
    chmod +x "$UPY"
  fi
  (cd /tmp && "$UPY" -c 'import kvikio; print("upstream kvikio", kvikio.__version__, kvikio.__file__)') \
    >> "$OUT/upstream.log" 2>&1 || note "upstream kvikio does not import (upstream.log): $(tail -1 "$OUT/upstream.log")"
}

# --- 1. build ------------------------------------------------------------------------------
t0=$(date +%s)
if ! { cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_PREFIX_PATH="$PREFIX_PATH" \
         "${CURL_ARGS[@]}" && cmake --build "$BUILD"; } >> "$OUT/build.log" 2>&1; then
  note "FATAL: C++ build failed"; tail -40 "$OUT/build.log"; exit 1
fi
note "C++ build: ok in $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
export CMAKE_ARGS="${CURL_ARGS[*]}"
if (cd "$SRC" && timeout 240 python3 -m pip install --no-build-isolation --no-deps -q .) > "$OUT/install.log" 2>&1; then
  note "Python package: installed in $(( $(date +%s) - t0 )) s"
else
  note "Python package: FAILED to install (see install.log)"; tail -20 "$OUT/install.log"
fi

# --- 2. C++ GPU tests in both cuFile states -----------------------------------------------
DEV=$(findmnt -no MAJ:MIN -T "$BUILD" | head -1)
udev_fix() {
  mkdir -p /run/udev/data
  for d in "$DEV" 254:0; do
    printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\nE:DEVTYPE=disk\n' > "/run/udev/data/b$d"
  done
}
udev_unfix() { for d in "$DEV" 254:0; do rm -f "/run/udev/data/b$d"; done; }
run_ctest() {  # $1: log name, $2: time limit, rest: ctest selection
  local name=$1 limit=$2; shift 2
  (cd "$BUILD" && timeout "$limit" ctest -j"$JOBS" --output-on-failure --timeout 120 "$@") > "$OUT/ctest_$name.log" 2>&1
  local rc=$?
  note "ctest $name: rc=$rc $(grep -E 'tests passed' "$OUT/ctest_$name.log" | tail -1) skipped=$(grep -c -- '(Skipped)' "$OUT/ctest_$name.log")"
  sed -n '/The following tests FAILED/,$p' "$OUT/ctest_$name.log" | grep -E '^\s+[0-9]+ - ' | head -10 | tee -a "$SUMMARY"
}
# Each binary runs whole in one process per state (CUDA and cuFile start once, not once per
# case as under ctest, which took minutes); test_device_main.cpp needs no stand-in variable.
run_gtest() {  # $1: log name, $2: time limit, $3: binary in tests/, rest: its arguments
  local name=$1 limit=$2 bin=$3; shift 3
  (cd "$BUILD/tests" && timeout "$limit" "./$bin" --gtest_brief=1 "$@") > "$OUT/gtest_$name.log" 2>&1
  local rc=$?
  note "gtest $name: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]' "$OUT/gtest_$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$OUT/gtest_$name.log" | head -10 | tee -a "$SUMMARY"
}
if stage tests; then
  udev_unfix
  run_gtest device_no_udev 150 test_device
  run_gtest multi_device_no_udev 100 test_multi_device
  udev_fix
  run_gtest device_udev 150 test_device
  run_gtest multi_device_udev 100 test_multi_device
  run_ctest remote_device 90 -R 'RemoteHttp.*Device|RemoteWrite.*Device'
  run_ctest fork_and_hardening 90 -R 'Hardening'
  # Upstream's cpp/examples made by our own programs, against the installed headers (issue 13).
  { cmake --install "$BUILD" --prefix /tmp/kvikio-install && \
    cmake -S "$SRC/tests/compat/examples" -B /tmp/compat-examples -G Ninja \
      -DCMAKE_PREFIX_PATH=/tmp/kvikio-install && cmake --build /tmp/compat-examples && \
    /tmp/compat-examples/compat_no_cuda && /tmp/compat-examples/compat_basic_io && \
    KVIKIO_COMPAT_MODE=OFF /tmp/compat-examples/compat_basic_io; } > "$OUT/compat_examples.log" 2>&1
  note "compat examples (no_cuda, basic_io AUTO and OFF): rc=$?"
fi

# --- 3. Python suite ----------------------------------------------------------------------
if stage tests; then
  (cd "$SRC" && timeout 240 python3 -m pytest python/tests -q -rsx -p no:cacheprovider) > "$OUT/pytest.log" 2>&1
  note "pytest: rc=$? $(tail -1 "$OUT/pytest.log")"
fi

if stage bench; then
# --- 4. benchmarks ------------------------------------------------------------------------
cd "$BUILD"
KVIKIO=$BUILD/tools/kvikio
timeout 120 env KVIKIO_COMPAT_MODE=ON "$KVIKIO" bench --memory device --size 4GiB --threads 16 \
  --repetitions 3 > "$OUT/bench_posix.txt" 2>> "$OUT/bench.err"
# cuFile (OFF forces it: AUTO takes POSIX without nvidia-fs), with the udev fix that lets
# cuFileHandleRegister work on this machine.
udev_fix
timeout 60 env KVIKIO_COMPAT_MODE=OFF "$KVIKIO" bench --memory device --size 1GiB --threads 16 \
  --repetitions 1 --ops read > "$OUT/bench_cufile.txt" 2>> "$OUT/bench.err"
# The disk is noisy: five cold repetitions, kvikio and the plain loop taking turns going first.
timeout 150 env KVIKIO_COMPAT_MODE=ON "$KVIKIO" bench --memory device --size 4GiB --threads 16 \
  --repetitions 5 --direct-io --ops read > "$OUT/bench_cold.txt" 2>> "$OUT/bench.err"
"$KVIKIO" info > "$OUT/info.txt" 2>&1
# For the documentation's benchmarks page (docs/benchmarks/*.json): device-memory reads by
# thread count, each with the limit measured in the same run; copied back beside the logs.
for t in 1 4 16; do
  timeout 60 env KVIKIO_COMPAT_MODE=ON "$KVIKIO" bench --memory device --size 4GiB --threads "$t" \
    --repetitions 2 --ops read --json > "$RESULTS/h200-device-4GiB-${t}threads.json" 2>> "$OUT/bench.err"
done
fi
# Small random reads (issue 14): single calls, pread().get() and the batch call, in IOPS; also
# alone as the stage "random", with the batch tests on the real driver.
if stage bench || stage random; then
KVIKIO=$BUILD/tools/kvikio
cd "$BUILD"
if stage random; then
  run_gtest batch_device 60 test_device --gtest_filter='*Batch*'
fi
for mem in host device; do
  timeout 90 "$KVIKIO" bench --pattern random --io-size 4KiB --size 1GiB --threads 16 \
    --memory $mem --repetitions 5 > "$OUT/bench_random_$mem.txt" 2>> "$OUT/bench.err"
done
# Remote (stage random only): 1000 random 64 KiB ranges of a 1 GiB file from a loopback nginx
# (.gpu-deps/nginx: the Debian package's files, dpkg -x, with its libpcre2 and libcrypt in lib/;
# that machine has no nginx): the batch call with each remote backend against one-by-one
# reads and bare curl multi.
if stage random; then
  NGINX_DIR=$SRC/.gpu-deps/nginx
  if [ -x "$NGINX_DIR/usr/sbin/nginx" ]; then
    # Then MULTI_POLL with one reactor per thread instead of the default one.
    for reactors in 1 16; do
      echo "KVIKIO_REMOTE_IO_NUM_REACTORS=$reactors" >> "$OUT/bench_remote_random.txt"
      timeout 150 env PATH="$NGINX_DIR/usr/sbin:$PATH" LD_LIBRARY_PATH="$NGINX_DIR/lib" \
        KVIKIO_REMOTE_IO_NUM_REACTORS=$reactors "$KVIKIO" bench --remote local --pattern random \
        --io-size 64KiB --size 1GiB --threads 16 --repetitions 3 \
        >> "$OUT/bench_remote_random.txt" 2>> "$OUT/bench.err"
    done
    # The same 1000 x 64 KiB through fsspec: kvikio+http's cat_ranges against fsspec's
    # HTTPFileSystem (needs aiohttp in .whl, else that row says skipped) and obstore.
    timeout 150 env PATH="$NGINX_DIR/usr/sbin:$PATH" LD_LIBRARY_PATH="$NGINX_DIR/lib" \
      python3 -m kvikio.benchmarks.fsspec_io --size 1GiB --threads 16 --repetitions 5 \
      > "$OUT/bench_fsspec.txt" 2>> "$OUT/bench.err"
  else
    note "remote random bench: skipped (no .gpu-deps/nginx)"
  fi
fi
# Opening, reading 64 KiB and closing through FileHandle against the plain calls, AUTO as the
# machine comes (no udev fix: cuFile registration fails there) and with the fix.
udev_unfix
timeout 30 "$KVIKIO" bench --pattern open --size 64KiB --io-size 64KiB > "$OUT/bench_open.txt" 2>> "$OUT/bench.err"
udev_fix
timeout 30 "$KVIKIO" bench --pattern open --size 64KiB --io-size 64KiB >> "$OUT/bench_open.txt" 2>> "$OUT/bench.err"
fi

# The Python layer's cost per small call (also in the stage "random").
if stage bench || stage random; then
timeout 60 python3 -m kvikio.benchmarks.overhead > "$OUT/overhead.txt" 2>> "$OUT/bench.err"
fi
if stage bench; then
timeout 120 python3 -m kvikio.benchmarks.s3_upload --size 512MiB --threads 16 --repetitions 2 \
  > "$OUT/s3_upload.txt" 2>> "$OUT/bench.err"
timeout 90 env KVIKIO_COMPAT_MODE=ON python3 -m kvikio.benchmarks.zarr_io --size 2GiB --chunk 64MiB \
  --threads 16 --repetitions 2 > "$OUT/zarr.txt" 2>> "$OUT/bench.err"
fi
# Dask (issue 26; stage "dask" alone): a LocalCUDACluster of one worker reading a 4 GiB zarr
# array into CuPy through GDSStore against the single-process GDSStore read, and a 2-process
# LocalCluster over GDSStore against LocalStore. Needs dask, distributed and dask-cuda (and
# what they import) in .whl.
if stage dask; then
  if python3 -c "import dask_cuda, distributed" 2>/dev/null; then
    timeout 240 env KVIKIO_COMPAT_MODE=ON python3 -m kvikio.benchmarks.dask_io --cuda --size 4GiB \
      --chunk 64MiB --threads 16 --repetitions 3 > "$OUT/dask_cuda.txt" 2>> "$OUT/bench.err"
    timeout 240 python3 -m kvikio.benchmarks.dask_io --size 2GiB --chunk 16MiB --workers 2 \
      --threads-per-worker 4 --threads 8 --repetitions 3 > "$OUT/dask_cpu.txt" 2>> "$OUT/bench.err"
  else
    note "dask benches: skipped (dask_cuda or distributed not importable: carry them in .whl)"
  fi
fi
# Upstream KvikIO side by side (issue 14; also alone as the stage "compare"): its wheels
# (kvikio-cu13, libkvikio-cu13, and rapids-logger and cuda-pathfinder that libkvikio loads)
# in a folder of their own; the same timing code runs under both interpreters over the same
# files, AUTO as the machine comes (no udev fix). At most about 2 minutes.
if stage bench || stage compare; then
cd "$BUILD"
if ls "$SRC"/.gpu-deps/upstream/kvikio_cu13-*.whl > /dev/null 2>&1; then
  setup_upstream
  export PYTHONPATH=$ZARR31:${PYTHONPATH:-}
  (cd /tmp && "$UPY" -c 'import kvikio, kvikio.zarr, zarr; print("upstream kvikio", kvikio.__version__, kvikio.__file__, "zarr", zarr.__version__)') \
    >> "$OUT/upstream.log" 2>&1 || note "upstream kvikio does not import (upstream.log): $(tail -1 "$OUT/upstream.log")"
  udev_unfix
  timeout 100 python3 -m kvikio.benchmarks.zarr_io --size 1GiB --chunk 64KiB 1MiB 16MiB --threads 16 \
    --repetitions 2 --api kvikio --compare-upstream "$UPY" > "$OUT/zarr_upstream.txt" 2>> "$OUT/bench.err"
  note "zarr vs upstream: rc=$?"
  timeout 30 python3 -m kvikio.benchmarks.overhead --open-read-close --iterations 1000 --repetitions 3 \
    --compare-upstream "$UPY" > "$OUT/open_read_close.txt" 2>> "$OUT/bench.err"
  note "open-read-close vs upstream: rc=$?"
  export PYTHONPATH=${PYTHONPATH#"$ZARR31":}
  udev_fix  # step 4b's OFF runs need cuFile registration
else
  note "upstream comparison: skipped (no .gpu-deps/upstream/kvikio_cu13-*.whl)"
fi
fi

# Many requests in flight (issue 28): N preads before the first get() against one pread, host
# and device (CuPy and torch), 16 threads of 4 KiB read() and the seed's checkpoint pattern,
# ours and upstream's wheels in the same run; the C++ tool's --pattern many beside them.
if stage many; then
  cd "$BUILD"
  KVIKIO=$BUILD/tools/kvikio
  if ls "$SRC"/.gpu-deps/upstream/kvikio_cu13-*.whl > /dev/null 2>&1; then
    setup_upstream
    UPSTREAM_ARGS=(--compare-upstream "$UPY")
  else
    UPSTREAM_ARGS=()
    note "many: upstream comparison skipped (no .gpu-deps/upstream/kvikio_cu13-*.whl)"
  fi
  timeout 300 env KVIKIO_COMPAT_MODE=ON python3 -m kvikio.benchmarks.many_io --dir /var/tmp \
    "${UPSTREAM_ARGS[@]}" > "$OUT/many_io.txt" 2>> "$OUT/bench.err"
  note "many_io: rc=$?"
  for mem in host device; do
    timeout 120 env KVIKIO_COMPAT_MODE=ON "$KVIKIO" bench --pattern many --memory $mem --size 4GiB \
      --threads 16 --repetitions 3 > "$OUT/bench_many_$mem.txt" 2>> "$OUT/bench.err"
    note "bench --pattern many --memory $mem: rc=$?"
  done
fi

if stage bench; then

# --- 4b. before/after: an earlier commit's tool beside this one, taking turns ---------------
# About 3 minutes: only when asked (GPU_SUITE_BEFORE_AFTER=1), as the redesign's check.
BEFORE_SRC=$SRC/.gpu-deps/before
if [ "${GPU_SUITE_BEFORE_AFTER:-0}" = 1 ] && [ -f "$BEFORE_SRC/CMakeLists.txt" ]; then
  if { cmake -S "$BEFORE_SRC" -B /var/tmp/kvikio-before -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DKVIKIO_BUILD_TESTS=OFF "${CURL_ARGS[@]}" \
       && cmake --build /var/tmp/kvikio-before --target kvikio_tool; } > "$OUT/build_before.log" 2>&1; then
    : > "$OUT/before_after.txt"
    for round in 1 2; do
      for which in before now; do
        tool=$KVIKIO; [ "$which" = before ] && tool=/var/tmp/kvikio-before/tools/kvikio
        for mode in ON OFF; do
          timeout 90 env KVIKIO_COMPAT_MODE=$mode "$tool" bench --memory device --size 4GiB \
            --threads 16 --repetitions 3 --json 2>> "$OUT/bench.err" \
            | python3 -c "import json,sys; d=json.load(sys.stdin); print('$which round $round compat=$mode', ' '.join(f\"{r['op']} {r['kvikio_gbps']} GB/s ratio {r['ratio']}\" for r in d['results']))" \
            >> "$OUT/before_after.txt" 2>> "$OUT/bench.err"
        done
      done
    done
  else
    note "before/after: the earlier tool did not build (build_before.log)"
  fi
fi

# --- 5. optional: several GPUs on one host (skipped on 1-GPU machines) --------------------
# The gpu.multi.* tests also run (and skip visibly) in step 2 on one GPU; here, with 2 or
# more, they run again in their own log in both cuFile states, and the bench reads one file
# into a buffer on each of the first two GPUs at once (per-device and aggregate rows).
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
MULTI_FILES=()
if [ "$NGPU" -ge 2 ]; then
  udev_unfix
  run_ctest multi_gpu_no_udev 100 -R '^gpu\.multi\.'
  udev_fix
  run_ctest multi_gpu_udev 100 -R '^gpu\.multi\.'
  timeout 120 env KVIKIO_COMPAT_MODE=ON "$KVIKIO" bench --memory device --devices 0,1 --size 4GiB \
    --threads 16 --repetitions 3 > "$OUT/bench_multi_posix.txt" 2>> "$OUT/bench.err"
  timeout 90 "$KVIKIO" bench --memory device --devices 0,1 --size 2GiB --threads 16 \
    --repetitions 1 --ops read > "$OUT/bench_multi_cufile.txt" 2>> "$OUT/bench.err"
  MULTI_FILES=(bench_multi_posix bench_multi_cufile)
else
  note "multi-GPU block: skipped ($NGPU GPU(s) listed by nvidia-smi -L)"
fi

fi

# --- 4c. checkpoints (issue 29; stage "checkpoint" alone: about 6 minutes) ------------------
# The safetensors tests with torch and CuPy on the GPU, then python -m kvikio.benchmarks.checkpoint
# on 16 GiB of bf16 in 4 shards, hot and cold, against safetensors, fastsafetensors, Run:ai and
# InstantTensor where importable. Their wheels (and safetensors', if the machine lacks it)
# travel in .gpu-deps/checkpoint (pip download --no-deps safetensors fastsafetensors
# runai-model-streamer runai-model-streamer-s3 instanttensor), installed into a folder of their own.
if stage checkpoint; then
  CKPT_SITE=/tmp/kvikio-checkpoint-site
  if ls "$SRC"/.gpu-deps/checkpoint/*.whl > /dev/null 2>&1 && [ ! -d "$CKPT_SITE" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$CKPT_SITE" \
      "$SRC"/.gpu-deps/checkpoint/*.whl > "$OUT/checkpoint_wheels.log" 2>&1
    note "checkpoint wheels: rc=$? $(ls "$SRC"/.gpu-deps/checkpoint | tr '\n' ' ')"
  fi
  [ -d "$CKPT_SITE" ] && export PYTHONPATH=$CKPT_SITE${PYTHONPATH:+:$PYTHONPATH}
  (cd "$SRC" && timeout 60 python3 -m pytest python/tests/test_safetensors.py -q -rsx -p no:cacheprovider) \
    > "$OUT/pytest_safetensors.log" 2>&1
  note "pytest safetensors: rc=$? $(tail -1 "$OUT/pytest_safetensors.log")"
  CKPT_DIR=/var/tmp/kvikio-checkpoint
  timeout 500 env KVIKIO_COMPAT_MODE=ON python3 -m kvikio.benchmarks.checkpoint --size 16GiB \
    --shards 4 --device cuda --threads 16 --repetitions "${CKPT_REPETITIONS:-2}" --cold --dir "$CKPT_DIR" \
    > "$OUT/checkpoint.txt" 2>> "$OUT/bench.err"
  note "checkpoint benchmark: rc=$?"
  rm -rf "$CKPT_DIR"
fi

# --- 6. the image's own compiler -------------------------------------------------------------
# Built that way, libkvikio.so once exported its private libstdc++ and `import cupy` crashed
# beside it; CMakeLists.txt now keeps symbols of static archives local. Checked here: what the
# library exports, and the GPU Python tests with that build.
if ! stage image; then
  note "image compiler step: not asked for (GPU_SUITE_STAGES has no 'image')"
elif [ -n "$IMAGE_CXX" ] && [ "$IMAGE_CXX" != /usr/bin/g++ ] && [ -x "$IMAGE_CXX" ]; then
  STATIC_SITE=/tmp/site-image-cxx
  if (cd "$SRC" && CXX=$IMAGE_CXX CC=${IMAGE_CXX%++}cc timeout 240 python3 -m pip install \
        --no-build-isolation --no-deps -q -C build-dir=/tmp/skbuild-image-cxx --target "$STATIC_SITE" .) \
       > "$OUT/install_image_cxx.log" 2>&1; then
    LIB=$(find "$STATIC_SITE" -name 'libkvikio.so*' -type f | head -1)
    {
      "$IMAGE_CXX" --version | head -1
      echo "libstdc++ in ldd: $(ldd "$LIB" | grep -c stdc++)"
      echo "std::locale symbols exported: $(nm -DC --defined-only "$LIB" | grep -c 'std::locale')"
      PYTHONPATH=$STATIC_SITE python3 -c 'import kvikio; print("kvikio from", kvikio.__file__)'
    } >> "$OUT/install_image_cxx.log" 2>&1
    (cd "$SRC" && PYTHONPATH=$STATIC_SITE:${PYTHONPATH:-} timeout 120 python3 -m pytest -q -p no:cacheprovider \
       python/tests/test_gpu.py python/tests/test_cufile.py python/tests/test_cufile_driver.py) \
      > "$OUT/pytest_image_cxx.log" 2>&1
    note "image compiler ($IMAGE_CXX): rc=$? $(tail -1 "$OUT/pytest_image_cxx.log"); $(tail -4 "$OUT/install_image_cxx.log" | tr '\n' ' ')"
  else
    note "image compiler ($IMAGE_CXX): Python package FAILED to build (install_image_cxx.log)"
  fi
else
  note "image compiler step: skipped (CXX='$IMAGE_CXX')"
fi

echo
echo "================ summary ================"
cat "$SUMMARY"
[ -f "$OUT/info.txt" ] && sed -n '/^libraries/,/^compat/p' "$OUT/info.txt"
for f in many_io bench_many_host bench_many_device bench_posix bench_cufile bench_cold bench_random_host bench_random_device bench_remote_random bench_open before_after overhead s3_upload zarr zarr_upstream open_read_close checkpoint \
         "${MULTI_FILES[@]}"; do
  [ -f "$OUT/$f.txt" ] && { echo "--- $f"; cat "$OUT/$f.txt"; }
done
tail -5 "$OUT/bench.err"
