#!/usr/bin/env bash
# Unpacks Debian .deb files of relpos's libraries (HDF5, yaml-cpp, CLI11, nlohmann-json, doctest)
# onto a machine that has no package registry (a GPU machine with PyTorch but none of them), and
# never over a file that is already there: a package holding any file that exists is skipped and
# said. Then the unversioned libX.so link a linker needs is made where only libX.so.N exists.
#
# Here (Debian bookworm, with network):
#   mkdir -p DEBDIR && (cd DEBDIR && apt-get download libhdf5-103-1 libhdf5-cpp-103-1 \
#     libhdf5-hl-100 libhdf5-hl-cpp-100 libhdf5-dev hdf5-helpers libaec0 libsz2 libaec-dev \
#     libyaml-cpp0.7 libyaml-cpp-dev libcli11-dev nlohmann-json3-dev doctest-dev zlib1g-dev \
#     libssl-dev libcurl4 libcurl4-openssl-dev libhdf5-fortran-102 libhdf5-hl-fortran-100)
# There (as root): scripts/cuda_deps.sh DEBDIR, then scripts/cuda_check.sh (docs/scaling.md).
set -uo pipefail
DEBS=${1:?usage: scripts/cuda_deps.sh DEBDIR}
ROOT=${RELPOS_DEPS_ROOT:-/}
shopt -s nullglob
debs=("$DEBS"/*.deb)
[ ${#debs[@]} -gt 0 ] || { echo "cuda_deps: no .deb files in $DEBS" >&2; exit 2; }
for deb in "${debs[@]}"; do
  name=$(basename "$deb")
  # Regular files and links the package would write (dpkg -c: "./usr/lib/..." in column 6).
  clash=""
  while read -r path; do
    [ -n "$path" ] || continue
    if [ -e "$ROOT/$path" ] || [ -L "$ROOT/$path" ]; then clash=$path; break; fi
  done < <(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's#^\./##')
  if [ -n "$clash" ]; then
    echo "cuda_deps: skipped $name ($clash is already there)"
  else
    dpkg-deb -x "$deb" "$ROOT" && echo "cuda_deps: unpacked $name"
  fi
done
# The link a -lX needs, where only the versioned library is there.
dir="$ROOT/usr/lib/x86_64-linux-gnu"
for lib in curl crypto ssl z sz aec; do
  { [ -e "$dir/lib$lib.so" ] || [ -L "$dir/lib$lib.so" ]; } && continue
  versions=("$dir/lib$lib.so."*)
  [ ${#versions[@]} -gt 0 ] || continue
  real=$(printf '%s\n' "${versions[@]}" | sort -V | tail -n 1)
  ln -s "$(basename "$real")" "$dir/lib$lib.so" && echo "cuda_deps: $dir/lib$lib.so -> $(basename "$real")"
done
command -v ldconfig >/dev/null && ldconfig
exit 0
