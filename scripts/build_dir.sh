#!/usr/bin/env bash
# Sourced by scripts/setup.sh (and so by scripts/test.sh and scripts/quickstart.sh): a build
# folder whose CMake cache was made for another checkout (a copied or moved tree) makes every
# cmake call fail with CMake's cache error ("... does not match the source ... used to generate
# cache"). relpos_reset_foreign_build_dir notices it and clears the cache so cmake configures the
# folder afresh for this tree. Tested by tests/scripts/foreign_build_dir.sh.

# relpos_cache_value BUILD_DIR KEY: the value of KEY in BUILD_DIR/CMakeCache.txt (empty if none).
relpos_cache_value() {
  sed -n "s/^$2:INTERNAL=//p" "$1/CMakeCache.txt" 2>/dev/null | head -n 1
}

# relpos_reset_foreign_build_dir BUILD_DIR SOURCE_DIR: when BUILD_DIR holds a CMake cache made for
# another source folder or in another build folder, removes CMakeCache.txt and CMakeFiles/ (what
# ties the folder to the other tree; compiled objects stay for the build to reuse or replace)
# and says so on stderr. Returns 0 either way.
relpos_reset_foreign_build_dir() {
  local build=$1 src=$2 home cachedir here_src here_build
  [ -f "$build/CMakeCache.txt" ] || return 0
  home=$(relpos_cache_value "$build" CMAKE_HOME_DIRECTORY)
  cachedir=$(relpos_cache_value "$build" CMAKE_CACHEFILE_DIR)
  here_src=$(cd "$src" && pwd -P)
  here_build=$(cd "$build" && pwd -P)
  local home_real="" cachedir_real=""
  [ -n "$home" ] && home_real=$(cd "$home" 2>/dev/null && pwd -P || echo "$home")
  [ -n "$cachedir" ] && cachedir_real=$(cd "$cachedir" 2>/dev/null && pwd -P || echo "$cachedir")
  if [ "$home_real" = "$here_src" ] && { [ -z "$cachedir" ] || [ "$cachedir_real" = "$here_build" ]; }; then
    return 0
  fi
  echo "setup: $build was configured for another checkout (source $home, build folder" \
       "${cachedir:-unknown}); clearing its CMake cache to configure it for $here_src" >&2
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
}
