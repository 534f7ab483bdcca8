// RMSNorm, one block per row: each thread sums its strided elements in order, warps meet in a
// fixed butterfly and warp totals are added in warp order, so a row's result never depends on T.
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

constexpr int kThreads = 256;

// 1 / sqrt(mean + eps) from each thread's sum of squares, summed in block_sum's fixed tree (the
// same for every row and T).
__device__ __forceinline__ float inv_rms(float ss, int64_t n, float eps, float* warp_tot) {
  return 1.0f / sqrtf(block_sum<kThreads>(ss, warp_tot) / static_cast<float>(n) + eps);
}

template <bool kBf16>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* __restrict__ x, int64_t ldx, const void* __restrict__ w, int64_t n, float eps,
                   float* __restrict__ y, int64_t ldy) {
  pdl_enter();
  __shared__ float warp_tot[kThreads / 32];
  const float* xr = x + blockIdx.x * ldx;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) ss = __fmaf_rn(xr[i], xr[i], ss);
  const float inv = inv_rms(ss, n, eps, warp_tot);
  float* yr = y + blockIdx.x * ldy;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) yr[i] = (xr[i] * inv) * load_weight(w, kBf16, i);
}

// The same arithmetic for rows of at most kThreads * kPer: a thread loads all its elements and
// weights at once into registers (one memory round trip instead of one per unrolled group of the
// loops above), then sums and scales them in the same element order.
template <bool kBf16, int kPer>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_regs_kernel(const float* __restrict__ x, int64_t ldx, const void* __restrict__ w, int64_t n, float eps,
                        float* __restrict__ y, int64_t ldy) {
  pdl_enter();
  __shared__ float warp_tot[kThreads / 32];
  const float* xr = x + blockIdx.x * ldx;
  float xv[kPer], wv[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int64_t i = threadIdx.x + int64_t(c) * kThreads;
    xv[c] = i < n ? xr[i] : 0.f;
    wv[c] = i < n ? load_weight(w, kBf16, i) : 0.f;
  }
  float ss = 0.f;
#pragma unroll
  for (int c = 0; c < kPer; ++c)
    if (threadIdx.x + int64_t(c) * kThreads < n) ss = __fmaf_rn(xv[c], xv[c], ss);
  const float inv = inv_rms(ss, n, eps, warp_tot);
  float* yr = y + blockIdx.x * ldy;
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    const int64_t i = threadIdx.x + int64_t(c) * kThreads;
    if (i < n) yr[i] = (xv[c] * inv) * wv[c];
  }
}

template <bool kBf16>
void launch_rmsnorm(const float* x, int64_t ldx, const void* w, int64_t n, int T, float eps, float* y, int64_t ldy,
                    cudaStream_t s) {
  if (n <= kThreads * 8)
    DELTAFIN_CUDA_CHECK(launch(rmsnorm_regs_kernel<kBf16, 8>, T, kThreads, 0, s, x, ldx, w, n, eps, y, ldy));
  else if (n <= kThreads * 32)
    DELTAFIN_CUDA_CHECK(launch(rmsnorm_regs_kernel<kBf16, 32>, T, kThreads, 0, s, x, ldx, w, n, eps, y, ldy));
  else DELTAFIN_CUDA_CHECK(launch(rmsnorm_kernel<kBf16>, T, kThreads, 0, s, x, ldx, w, n, eps, y, ldy));
}

}  // namespace

void rmsnorm(const float* dev_x, int64_t ldx, const void* dev_w, WeightType wtype, int64_t n, int T, float eps,
             float* dev_y, int64_t ldy, Stream stream) {
  if (n <= 0 || T < 0) throw CudaError("rmsnorm: n must be positive and T non-negative");
  if (T == 0) return;
  if (wtype == WeightType::BF16) launch_rmsnorm<true>(dev_x, ldx, dev_w, n, T, eps, dev_y, ldy, as_stream(stream));
  else launch_rmsnorm<false>(dev_x, ldx, dev_w, n, T, eps, dev_y, ldy, as_stream(stream));
}

}  // namespace deltafin::cuda
