#!/usr/bin/env bash
# Installs what building and testing need (Debian/Ubuntu packages, Python packages), then
# configures and builds the library, the `kvikio` tool and the tests into build/.
# Safe to run again: installed packages are skipped and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ninja-build pkg-config git rsync
              libgtest-dev libgmock-dev clang-format python3 python3-pip python3-venv
              libcurl4-openssl-dev liburing-dev openssl nginx-light python3-dev doxygen libspdlog-dev
              clang libclang-rt-dev llvm)
# clang, libclang-rt-dev (libFuzzer's runtime: only recommended by clang, and recommends are
# not installed here) and llvm (llvm-symbolizer for readable sanitizer stacks): scripts/fuzz.sh.
# nvidia-cufile: cufile.h (types and prototypes only; libcufile is loaded at run time).
# moto is pinned: its S3 signature checks differ between releases (5.2.1 refuses a SigV4
# request for a key with parentheses that 5.2.5 accepts, as AWS does).
# docs/requirements.txt: Sphinx, Breathe, MyST-Parser, matplotlib for scripts/docs.sh.
PIP_PACKAGES=(nvidia-cufile "moto[server]==5.2.5" boto3 -r docs/requirements.txt)
# cuda.h: from the CUDA toolkit where there is one, else from the nvidia-cuda-runtime wheel.
[ -f /usr/local/cuda/include/cuda.h ] || PIP_PACKAGES+=(nvidia-cuda-runtime)
# nvtx3 (header-only NVTX ranges, kvikio/nvtx.hpp): the toolkit's, else the nvidia-nvtx wheel's.
[ -f /usr/local/cuda/include/nvtx3/nvtx3.hpp ] || PIP_PACKAGES+=(nvidia-nvtx)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bootstrap] installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#PIP_PACKAGES[@]} -gt 0 ]; then
  python3 -m pip install -q "${PIP_PACKAGES[@]}"
fi

BUILD_DIR=${KVIKIO_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVIKIO_WARNINGS_AS_ERRORS=ON
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "[bootstrap] built into $BUILD_DIR (tool: $BUILD_DIR/tools/kvikio)"
