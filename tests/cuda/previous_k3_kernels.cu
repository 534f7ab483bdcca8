#include "previous_k3_kernels.h"

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::check::previous {
namespace {

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

__device__ __forceinline__ float sigm(float x) { return 1.f / (1.f + expf(-x)); }

__device__ __forceinline__ float load_w(const void* w, bool bf16, int64_t i) {
  if (bf16) return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16);
  return static_cast<const float*>(w)[i];
}

__global__ void mla_absorb_kernel(const float* q, const void* kvb, bool bf16, int nh, int N, int P, int Vd, int R,
                                  float* qabs) {
  pdl_enter();
  const int th = blockIdx.y;  // t * nh + h
  const int h = th % nh;
  const float* qn = q + int64_t(th) * (N + P);
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < R; j += gridDim.x * blockDim.x) {
    float acc = 0.f;
    for (int n = 0; n < N; ++n) acc = __fmaf_rn(qn[n], load_w(kvb, bf16, (int64_t(h) * (N + Vd) + n) * R + j), acc);
    qabs[int64_t(th) * R + j] = acc;
  }
}

__global__ void mla_value_kernel(const float* olat, const void* kvb, bool bf16, int nh, int N, int R, int Vd,
                                 float* attn, int64_t total) {
  pdl_enter();
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);  // (t*nh + h)*Vd + v
  const int lane = threadIdx.x & 31;
  if (idx >= total) return;
  const int64_t th = idx / Vd;
  const int vv = static_cast<int>(idx % Vd);
  const int h = static_cast<int>(th % nh);
  const int64_t wrow = int64_t(h) * (N + Vd) + N + vv;
  const float* x = olat + th * R;
  float a = 0.f;
  for (int j = lane; j < R; j += 32) a = __fmaf_rn(load_w(kvb, bf16, wrow * R + j), x[j], a);
  a = warp_sum(a);
  if (lane == 0) attn[idx] = a;
}

constexpr int kRouterThreads = 256;
__global__ void __launch_bounds__(kRouterThreads) router_kernel(const float* logits, const float* bias, int E, int k,
                                                                bool renorm, float scaling, int32_t* ids, float* wts) {
  pdl_enter();
  extern __shared__ float rs[];
  float* s = rs;       // [E]
  float* key = s + E;  // [E]
  __shared__ float bv[kRouterThreads / 32];
  __shared__ int bi[kRouterThreads / 32];
  __shared__ int chosen[64];
  const int t = blockIdx.x;
  for (int e = threadIdx.x; e < E; e += kRouterThreads) {
    s[e] = sigm(logits[int64_t(t) * E + e]);
    key[e] = s[e] + (bias ? bias[e] : 0.f);
  }
  __syncthreads();
  for (int r = 0; r < k; ++r) {
    float best = -INFINITY;
    int besti = 0x7fffffff;
    for (int e = threadIdx.x; e < E; e += kRouterThreads)
      if (key[e] > best || (key[e] == best && e < besti)) {
        best = key[e];
        besti = e;
      }
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, m);
      const int oi = __shfl_xor_sync(0xffffffffu, besti, m);
      if (ob > best || (ob == best && oi < besti)) {
        best = ob;
        besti = oi;
      }
    }
    if ((threadIdx.x & 31) == 0) {
      bv[threadIdx.x >> 5] = best;
      bi[threadIdx.x >> 5] = besti;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float b = bv[0];
      int i0 = bi[0];
      for (int w = 1; w < kRouterThreads / 32; ++w)
        if (bv[w] > b || (bv[w] == b && bi[w] < i0)) {
          b = bv[w];
          i0 = bi[w];
        }
      chosen[r] = i0;
      key[i0] = -INFINITY;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int a = 1; a < k; ++a)  // ascending expert id: the fixed summation order
      for (int b = a; b > 0 && chosen[b - 1] > chosen[b]; --b) {
        const int tmp = chosen[b];
        chosen[b] = chosen[b - 1];
        chosen[b - 1] = tmp;
      }
    float sum = 0.f;
    for (int i = 0; i < k; ++i) sum += s[chosen[i]];
    for (int i = 0; i < k; ++i) {
      ids[t * k + i] = chosen[i];
      const float sc = s[chosen[i]];
      wts[t * k + i] = (renorm ? sc / (sum + 1e-20f) : sc) * scaling;
    }
  }
}

__global__ void sigmoid_kernel(const float* x, float* s, int64_t n) {
  pdl_enter();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) s[i] = sigm(x[i]);
}

// The first MLA attention kernel: one position per warp at a time, each output column's
// sum waiting for every load.

constexpr int kAttThreads = 256;
__global__ void __launch_bounds__(kAttThreads)
    mla_attend_kernel(const float* __restrict__ qabs, const float* __restrict__ q, const float* __restrict__ cache,
                      int64_t base, int nh, int N, int R, int P, float scale, float* scores, int64_t max_ctx,
                      float* olat) {
  pdl_enter();
  __shared__ float sh[kAttThreads / 32];
  const int th = blockIdx.x;
  const int t = th / nh;
  const int W = R + P;
  const int64_t ctx = base + t + 1;
  const float* qa = qabs + int64_t(th) * R;
  const float* qr = q + int64_t(th) * (N + P) + N;
  float* sc = scores + int64_t(th) * max_ctx;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int64_t s = warp; s < ctx; s += kAttThreads / 32) {
    const float* row = cache + s * W;
    float a = 0.f, r = 0.f;
    for (int j = lane; j < R; j += 32) a = __fmaf_rn(qa[j], row[j], a);
    for (int j = lane; j < P; j += 32) r = __fmaf_rn(qr[j], row[R + j], r);
    a = warp_sum(a);
    r = warp_sum(r);
    if (lane == 0) sc[s] = (a + r) * scale;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < ctx; s += kAttThreads) mx = fmaxf(mx, sc[s]);
  mx = block_max<kAttThreads>(mx, sh);
  float sum = 0.f;
  for (int64_t s = threadIdx.x; s < ctx; s += kAttThreads) {
    const float e = expf(sc[s] - mx);
    sc[s] = e;
    sum += e;
  }
  sum = block_sum<kAttThreads>(sum, sh);
  for (int j = threadIdx.x; j < R; j += kAttThreads) {
    float acc = 0.f;
    for (int64_t s = 0; s < ctx; ++s) acc = __fmaf_rn(sc[s] / sum, cache[s * W + j], acc);
    olat[int64_t(th) * R + j] = acc;
  }
}

}  // namespace

void router_select(const float* logits, const float* bias, int T, int E, int k, bool renormalize, float scaling,
                   int32_t* ids, float* weights, Stream s) {
  if (T <= 0) return;
  const size_t smem = size_t(2) * E * sizeof(float);
  DELTAFIN_CUDA_CHECK(launch(router_kernel, T, kRouterThreads, smem, as_stream(s), logits, bias, E, k, renormalize,
                             scaling, ids, weights));
}

void mla_absorb_q(const float* q, const void* kv_b, bool bf16, int R, int T, int nh, int N, int P, int Vd, float* qabs,
                  Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(mla_absorb_kernel, dim3(blocks_for(R, 128), T * nh), 128, 0, as_stream(s), q, kv_b, bf16,
                             nh, N, P, Vd, R, qabs));
}

void mla_value(const float* olat, const void* kv_b, bool bf16, int T, int nh, int N, int R, int Vd, float* attn,
               Stream s) {
  if (T <= 0) return;
  const int64_t total = int64_t(T) * nh * Vd;
  DELTAFIN_CUDA_CHECK(launch(mla_value_kernel, blocks_for(total, 8), 256, 0, as_stream(s), olat, kv_b, bf16, nh, N, R,
                             Vd, attn, total));
}

void router_sigmoid(const float* x, float* s, int64_t n, Stream s_) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(sigmoid_kernel, blocks_for(n, 256), 256, 0, as_stream(s_), x, s, n));
}

void mla_attend(const float* qabs, const float* q, const float* cache, int64_t base, int T, int nh, int N, int R, int P,
                float scale, float* scores, int64_t max_ctx, float* olat, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(mla_attend_kernel, T * nh, kAttThreads, 0, as_stream(s), qabs, q, cache, base, nh, N, R, P,
                             scale, scores, max_ctx, olat));
}

}  // namespace deltafin::cuda::check::previous
