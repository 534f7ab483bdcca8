#!/bin/sh
# On the development machine: packs the `deltafin` command (CPU and CUDA forwards, no Qt) for a GPU
# machine that has only the CUDA driver, CMake and Python: the stripped program and the shared
# libraries it needs that are not glibc or the CUDA driver, as one xz archive under $CARRY (default
# build/carry-cli; carry that path). On the GPU machine:
#   mkdir -p /tmp/cli && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
#     build/carry-cli/deltafin-cli.tar.xz /tmp/cli
#   LD_LIBRARY_PATH=/tmp/cli/lib /tmp/cli/bin/deltafin ...
# For example the GPU forward against the float64 reference on deep models (issue 34):
#   DEVICE=cuda LD_LIBRARY_PATH=/tmp/cli/lib tests/precision/measure_deep.sh /tmp/cli/bin/deltafin 24 48
set -eu
# shellcheck source=SCRIPTDIR/needed-libs.sh
. "$(dirname "$0")/needed-libs.sh"
BUILD=${BUILD:-build/ci-cuda}
CARRY=${CARRY:-build/carry-cli}
[ -f "$BUILD/CMakeCache.txt" ] || cmake --preset ci-cuda
cmake --build "$BUILD" -j"${JOBS:-2}" --target deltafin
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$BUILD/bin/deltafin" "$stage/bin/"
strip --strip-unneeded "$stage/bin/deltafin"
copy_needed_libs "$stage/bin/deltafin" "$stage/lib"
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
rm -rf "$CARRY"
mkdir -p "$CARRY"
tar -C "$stage" -cf - bin lib | xz -T0 -6 > "$CARRY/deltafin-cli.tar.xz"
du -sh "$CARRY"
