#!/bin/sh
# On the development machine: builds the Qt-free CUDA tools (deltafin-cuda-check: every GPU op against
# its CPU reference as one table; deltafin-cuda-bench: the expert kernel and GEMV measurements;
# deltafin-cuda-k3: the K3 forward's checks and measurements; deltafin-cuda-k3-bench: its fp64 kernels' speed) and packs them for a GPU machine that
# has only the CUDA driver, CMake and Python: the stripped programs and the shared libraries they need
# that are not glibc or the CUDA driver, under $CARRY (default build/carry, as cuda-tools.tar.xz; carry that path to the device). The fixtures the checks read are in the repository (tests/fixtures).
#   tools/device/pack-cuda-tools.sh            # build/ci-cuda (sm_86, 89, 90a, 120)
#   BUILD=build/cu tools/device/pack-cuda-tools.sh   # a build from tools/bench/cuda-build.sh (sm_90a)
set -eu
# shellcheck source=SCRIPTDIR/needed-libs.sh
. "$(dirname "$0")/needed-libs.sh"
BUILD=${BUILD:-build/ci-cuda}
CARRY=${CARRY:-build/carry}
TOOLS="deltafin-cuda-check deltafin-cuda-bench deltafin-cuda-k3 deltafin-cuda-k3-bench"
[ -f "$BUILD/CMakeCache.txt" ] || cmake --preset ci-cuda
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"${JOBS:-2}" --target $TOOLS
rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"
for t in $TOOLS; do
  cp "$BUILD/bin/$t" "$CARRY/bin/"
  strip --strip-unneeded "$CARRY/bin/$t"
  copy_needed_libs "$CARRY/bin/$t" "$CARRY/lib"
done
strip --strip-unneeded "$CARRY"/lib/* 2>/dev/null || true
# The programs and libraries travel as one xz archive (machine code compresses ~4x), which the
# scripts unpack: beside the ~43 MiB tree only ~21 MiB may be carried (tools/device/README.md). A
# four-architecture build packs to ~21 MB, an sm_90a one (BUILD=build/cu) to ~9 MB.
tar -C "$CARRY" -cf - bin lib | xz -T0 -6 > "$CARRY.tar.xz"
rm -rf "${CARRY:?}"/bin "${CARRY:?}"/lib
mv "$CARRY.tar.xz" "$CARRY/cuda-tools.tar.xz"
du -sh "$CARRY"
size=$(du -sm "$CARRY" | cut -f1)
if [ "$size" -gt 21 ]; then
  echo "pack-cuda-tools: $CARRY is $size MB, over the ~21 MB a device run may carry beside the tree" >&2
  exit 1
fi
