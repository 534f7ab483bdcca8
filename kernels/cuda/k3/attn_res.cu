// AttnRes: softmax over the entries' scores, then the weighted sum of the entries.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// AttnRes in two launches: one block per (entry, row) scores the entries, then blocks of columns
// mix them. (One block per row did both and ran the entries one after another on one SM: ~17 us
// per call at T=1 for almost no bytes, measured with ncu.) Every score, the softmax and every
// output element are computed exactly as by that one block, so the bits are the same. Both kernels
// issue all of a thread's loads before the first sum that needs them (kResPer values of a row, up
// to kResGroup entries of a column): the loops before waited for each load in turn.
constexpr int kResThreads = 256;
constexpr int kResMixCols = 4 * kResThreads;  // output columns per mixing block
constexpr int kResPer = 32;                   // a row's values per thread held in registers (H <= 8192)
constexpr int kResGroup = 8;                  // entries whose values a mixing thread loads at once
__global__ void __launch_bounds__(kResThreads)
    attn_res_score_kernel(ResEntries e, const float* __restrict__ w, int H, double eps, double* __restrict__ scores) {
  pdl_enter();
  __shared__ double sh[kResThreads / 32];
  const int i = blockIdx.x;
  const int64_t t = blockIdx.y;
  const double* v = e.p[i] + t * H;
  double ss = 0.0, d = 0.0;
  if (H <= kResPer * kResThreads) {
    double x[kResPer], wv[kResPer];
#pragma unroll
    for (int k = 0; k < kResPer; ++k) {
      const int j = static_cast<int>(threadIdx.x) + k * kResThreads;
      x[k] = j < H ? v[j] : 0.0;
      wv[k] = j < H ? w[j] : 0.0;
    }
#pragma unroll
    for (int k = 0; k < kResPer; ++k)
      if (static_cast<int>(threadIdx.x) + k * kResThreads < H) ss = __fma_rn(x[k], x[k], ss);
    const double inv = 1.0 / sqrt(block_sum<kResThreads>(ss, sh) / static_cast<double>(H) + eps);
#pragma unroll
    for (int k = 0; k < kResPer; ++k)
      if (static_cast<int>(threadIdx.x) + k * kResThreads < H) d = __fma_rn(x[k] * inv, wv[k], d);
  } else {
    for (int j = threadIdx.x; j < H; j += kResThreads) ss = __fma_rn(v[j], v[j], ss);
    const double inv = 1.0 / sqrt(block_sum<kResThreads>(ss, sh) / static_cast<double>(H) + eps);
    for (int j = threadIdx.x; j < H; j += kResThreads) d = __fma_rn(v[j] * inv, w[j], d);
  }
  d = block_sum<kResThreads>(d, sh);
  if (threadIdx.x == 0) scores[t * kMaxResEntries + i] = d;
}

__global__ void __launch_bounds__(kResThreads)
    attn_res_kernel(ResEntries e, const double* __restrict__ scores, int H, double* __restrict__ out) {
  pdl_enter();
  __shared__ double prob[kMaxResEntries];
  const int64_t t = blockIdx.y;
  if (static_cast<int>(threadIdx.x) < e.n) prob[threadIdx.x] = scores[t * kMaxResEntries + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    double mx = prob[0];
    for (int i = 1; i < e.n; ++i) mx = fmax(mx, prob[i]);
    double sum = 0.0;
    for (int i = 0; i < e.n; ++i) {
      prob[i] = exp(prob[i] - mx);
      sum += prob[i];
    }
    for (int i = 0; i < e.n; ++i) prob[i] = prob[i] / sum;
  }
  __syncthreads();
  constexpr int kCols = kResMixCols / kResThreads;
  const int j0 = static_cast<int>(blockIdx.x) * kResMixCols + static_cast<int>(threadIdx.x);
  double o[kCols] = {};
  for (int i0 = 0; i0 < e.n; i0 += kResGroup) {
    double x[kResGroup][kCols];
#pragma unroll
    for (int u = 0; u < kResGroup; ++u)
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int j = j0 + c * kResThreads;
        x[u][c] = i0 + u < e.n && j < H ? e.p[i0 + u][t * H + j] : 0.0;
      }
#pragma unroll
    for (int u = 0; u < kResGroup; ++u)
      if (i0 + u < e.n)
#pragma unroll
        for (int c = 0; c < kCols; ++c) o[c] = __fma_rn(prob[i0 + u], x[u][c], o[c]);
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int j = j0 + c * kResThreads;
    if (j < H) out[t * H + j] = o[c];
  }
}

}  // namespace

void attn_res_mix(const ResEntries& e, const float* w, int T, int H, double eps, double* scratch, double* out,
                  Stream s) {
  if (e.n < 1 || e.n > kMaxResEntries)
    throw CudaError("attn_res_mix: 1.." + std::to_string(kMaxResEntries) + " entries");
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(attn_res_score_kernel, dim3(e.n, T), kResThreads, 0, as_stream(s), e, w, H, eps, scratch));
  DELTAFIN_CUDA_CHECK(launch(attn_res_kernel, dim3((H + kResMixCols - 1) / kResMixCols, T), kResThreads, 0,
                             as_stream(s), e, scratch, H, out));
}

}  // namespace deltafin::cuda::k3
