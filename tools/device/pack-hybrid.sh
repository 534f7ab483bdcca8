#!/bin/sh
# On the development machine: builds deltafin-cuda-k3 (the Qt-free CUDA checks and measurements,
# sm_90a among its architectures) and packs it for a GPU machine that has only the CUDA driver,
# CMake and Python: the stripped program and the shared libraries it needs that are not glibc or
# the CUDA driver, under $CARRY (default build/carry; carry that path to the device).
set -eu
# shellcheck source=SCRIPTDIR/needed-libs.sh
. "$(dirname "$0")/needed-libs.sh"
BUILD=${BUILD:-build/ci-cuda}
CARRY=${CARRY:-build/carry}
[ -f "$BUILD/CMakeCache.txt" ] || cmake --preset ci-cuda
cmake --build "$BUILD" -j"${JOBS:-2}" --target deltafin-cuda-k3
rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"
cp "$BUILD/bin/deltafin-cuda-k3" "$CARRY/bin/"
strip --strip-debug "$CARRY/bin/deltafin-cuda-k3"
copy_needed_libs "$CARRY/bin/deltafin-cuda-k3" "$CARRY/lib"
du -sh "$CARRY"
