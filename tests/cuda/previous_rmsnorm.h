#pragma once
// kernels/cuda/rmsnorm.cu's kernel as it was before rows were held in registers, kept (for the
// checks only) to show that the change kept every output bit.
#include <cstdint>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::check::previous {

void rmsnorm(const float* dev_x, int64_t ldx, const void* dev_w, WeightType wtype, int64_t n, int T, float eps,
             float* dev_y, int64_t ldy);

}  // namespace deltafin::cuda::check::previous
