// Sigmoid router top-k, one block per row: k rounds of a block-wide argmax with ties going to the
// lower expert index, so the choice and its order are deterministic and independent of T.
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxPerThread = 8;  // up to 2048 experts

struct Best {
  float v;
  int i;
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

__global__ void __launch_bounds__(kThreads) router_topk_kernel(const float* __restrict__ logits, const float* __restrict__ bias,
                                                               int n, int k, float scaling, int32_t* __restrict__ idx,
                                                               float* __restrict__ weight) {
  pdl_enter();
  __shared__ Best warp_best[kThreads / 32];
  __shared__ int chosen[64];
  __shared__ float chosen_s[64];
  const float* lr = logits + static_cast<int64_t>(blockIdx.x) * n;
  float score[kMaxPerThread], sig[kMaxPerThread];
#pragma unroll
  for (int j = 0; j < kMaxPerThread; ++j) {
    const int e = threadIdx.x + j * kThreads;
    if (e < n) {
      sig[j] = 1.0f / (1.0f + expf(-lr[e]));
      score[j] = sig[j] + (bias ? bias[e] : 0.f);
    } else {
      sig[j] = 0.f;
      score[j] = -INFINITY;
    }
  }
  for (int r = 0; r < k; ++r) {
    Best b{-INFINITY, 0x7fffffff};
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int e = threadIdx.x + j * kThreads;
      if (e < n) b = better(b, Best{score[j], e});
    }
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
      Best o{__shfl_xor_sync(0xffffffffu, b.v, m), __shfl_xor_sync(0xffffffffu, b.i, m)};
      b = better(b, o);
    }
    if ((threadIdx.x & 31) == 0) warp_best[threadIdx.x >> 5] = b;
    __syncthreads();
    if (threadIdx.x == 0) {
      Best t = warp_best[0];
      for (int w = 1; w < kThreads / 32; ++w) t = better(t, warp_best[w]);
      chosen[r] = t.i;
    }
    __syncthreads();
    const int c = chosen[r];
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      if (threadIdx.x + j * kThreads == c) {
        chosen_s[r] = sig[j];
        score[j] = -INFINITY;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int r = 0; r < k; ++r) sum += chosen_s[r];
    const float denom = sum + 1e-20f;
    for (int r = 0; r < k; ++r) {
      idx[static_cast<int64_t>(blockIdx.x) * k + r] = chosen[r];
      weight[static_cast<int64_t>(blockIdx.x) * k + r] = chosen_s[r] / denom * scaling;
    }
  }
}

}  // namespace

void router_topk(const float* dev_logits, const float* dev_bias, int T, int n_experts, int top_k, float scaling,
                 int32_t* dev_idx, float* dev_weight, Stream stream) {
  if (n_experts <= 0 || n_experts > kThreads * kMaxPerThread)
    throw CudaError("router_topk: the expert count must be between 1 and " + std::to_string(kThreads * kMaxPerThread));
  if (top_k <= 0 || top_k > 64 || top_k > n_experts)
    throw CudaError("router_topk: top_k must be between 1 and min(64, experts)");
  if (T < 0) throw CudaError("router_topk: T must be non-negative");
  if (T == 0) return;
  DELTAFIN_CUDA_CHECK(launch(router_topk_kernel, T, kThreads, 0, as_stream(stream), dev_logits, dev_bias, n_experts, top_k, scaling, dev_idx,
                                                            dev_weight));
}

}  // namespace deltafin::cuda
