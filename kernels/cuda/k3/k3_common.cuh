#pragma once
// Device helpers the K3 ops share (included by kernels/cuda/k3/*.cu only).
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_common.cuh"
#include "cuda/k3/k3_ops.h"

namespace deltafin::cuda::k3 {

__device__ __forceinline__ double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

inline unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Grid of a grid-stride elementwise kernel of 256 threads: at most 4096 blocks.
inline unsigned grid_1d(int64_t n) { return static_cast<unsigned>(std::min<int64_t>(blocks_for(n, 256), 4096)); }

}  // namespace deltafin::cuda::k3
