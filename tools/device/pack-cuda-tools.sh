#!/bin/sh
# On the development machine: builds the Qt-free CUDA tools (deltafin-cuda-check: every GPU op against
# its CPU reference as one table; deltafin-cuda-bench: the expert kernel and GEMV measurements;
# deltafin-cuda-k3: the K3 forward's checks and measurements) and packs them for a GPU machine that
# has only the CUDA driver, CMake and Python: the stripped programs and the shared libraries they need
# that are not glibc or the CUDA driver, under $CARRY (default build/carry, at most 45 MB, as
# cuda-tools.tar.xz when the plain files are larger; carry that path to the device). The fixtures the checks read are in the repository (tests/fixtures).
#   tools/device/pack-cuda-tools.sh            # build/ci-cuda (sm_86, 89, 90a, 120)
#   BUILD=build/cu tools/device/pack-cuda-tools.sh   # a build from tools/bench/cuda-build.sh (sm_90a)
set -eu
# shellcheck source=SCRIPTDIR/needed-libs.sh
. "$(dirname "$0")/needed-libs.sh"
BUILD=${BUILD:-build/ci-cuda}
CARRY=${CARRY:-build/carry}
TOOLS="deltafin-cuda-check deltafin-cuda-bench deltafin-cuda-k3"
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
# The three programs hold the kernels' fatbins for four architectures (~60 MB together): above the
# limit they travel as one xz archive (machine code compresses ~4x), which house-h200.sh unpacks.
size=$(du -sm "$CARRY" | cut -f1)
if [ "$size" -gt 45 ]; then
  tar -C "$CARRY" -cf - bin lib | xz -T0 -6 > "$CARRY.tar.xz"
  rm -rf "$CARRY"/bin "$CARRY"/lib
  mv "$CARRY.tar.xz" "$CARRY/cuda-tools.tar.xz"
fi
du -sh "$CARRY"
size=$(du -sm "$CARRY" | cut -f1)
if [ "$size" -gt 45 ]; then
  echo "pack-cuda-tools: $CARRY is $size MB, over the 45 MB a device run may carry" >&2
  exit 1
fi
