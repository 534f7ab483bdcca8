#!/bin/sh
# Builds the CUDA measurement programs for an H200 (sm_90a), the GEMV and routed-expert sweeps included; carry $BUILD/bin
# to the GPU machine.
set -eu
BUILD=${BUILD:-build/cu}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDELTAFIN_BUILD_GUI=OFF \
  -DDELTAFIN_WERROR=ON -DDELTAFIN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DDELTAFIN_GEMM_SWEEP=ON
cmake --build "$BUILD" --target deltafin-cuda-check deltafin-cuda-bench deltafin-cuda-k3 deltafin-cuda-k3-bench deltafin
