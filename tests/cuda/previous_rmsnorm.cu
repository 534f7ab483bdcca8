#include "previous_rmsnorm.h"

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::check::previous {
namespace {

constexpr int kThreads = 256;

template <bool kBf16>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* __restrict__ x, int64_t ldx, const void* __restrict__ w, int64_t n, float eps,
                   float* __restrict__ y, int64_t ldy) {
  pdl_enter();
  __shared__ float warp_tot[kThreads / 32];
  const float* xr = x + blockIdx.x * ldx;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) ss = __fmaf_rn(xr[i], xr[i], ss);
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) warp_tot[threadIdx.x >> 5] = ss;
  __syncthreads();
  float tot = 0.f;
#pragma unroll
  for (int k = 0; k < kThreads / 32; ++k) tot += warp_tot[k];
  const float inv = 1.0f / sqrtf(tot / static_cast<float>(n) + eps);
  float* yr = y + blockIdx.x * ldy;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    float wi;
    if constexpr (kBf16) wi = __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16);
    else wi = static_cast<const float*>(w)[i];
    yr[i] = (xr[i] * inv) * wi;
  }
}

}  // namespace

void rmsnorm(const float* dev_x, int64_t ldx, const void* dev_w, WeightType wtype, int64_t n, int T, float eps,
             float* dev_y, int64_t ldy) {
  if (T <= 0) return;
  if (wtype == WeightType::BF16)
    DELTAFIN_CUDA_CHECK(launch(rmsnorm_kernel<true>, T, kThreads, 0, nullptr, dev_x, ldx, dev_w, n, eps, dev_y, ldy));
  else
    DELTAFIN_CUDA_CHECK(launch(rmsnorm_kernel<false>, T, kThreads, 0, nullptr, dev_x, ldx, dev_w, n, eps, dev_y, ldy));
}

}  // namespace deltafin::cuda::check::previous
