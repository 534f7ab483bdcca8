// Qwen3 drafter kernels. Each reduction runs in one fixed order for a given shape, so a forward
// is deterministic run to run; none of them is on the K3 target's path.
#include <cfloat>

#include "cuda/cuda_common.cuh"
#include "cuda/qwen3/qwen3_kernels.h"

namespace deltafin::cuda::qwen3 {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 * 16 ? b : 65535 * 16);
}

// Block-wide reductions in a fixed tree: warp butterflies, then warp totals in warp order.
__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float tot = 0.f;
  for (int k = 0; k < warps; ++k) tot += shared[k];
  return tot;
}

__device__ float block_max(float v, float* shared) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float mx = -INFINITY;
  for (int k = 0; k < warps; ++k) mx = fmaxf(mx, shared[k]);
  return mx;
}

__global__ void embed_kernel(const uint16_t* __restrict__ embed, int64_t H, const int32_t* __restrict__ ids, int T,
                             float* __restrict__ x) {
  const int64_t n = int64_t(T) * H;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / H, j = i % H;
    x[i] = __uint_as_float(uint32_t(embed[int64_t(ids[t]) * H + j]) << 16);
  }
}

// One warp per (row, head) of q or k; v heads are only copied into the cache.
__global__ void qk_norm_rope_kernel(float* __restrict__ qkv, int T, int nh, int nkv, int hd,
                                    const float* __restrict__ qn, const float* __restrict__ kn, float eps, int64_t pos0,
                                    double theta, float* __restrict__ kc, float* __restrict__ vc) {
  const int heads_all = nh + 2 * nkv;
  const int64_t job = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (job >= int64_t(T) * heads_all) return;
  const int t = static_cast<int>(job / heads_all), h = static_cast<int>(job % heads_all);
  const int64_t row = int64_t(t) * heads_all * hd;
  float* x = qkv + row + int64_t(h) * hd;
  const int64_t pos = pos0 + t;
  const int64_t KW = int64_t(nkv) * hd;
  if (h >= nh + nkv) {  // a v head: straight into the cache
    float* dst = vc + pos * KW + int64_t(h - nh - nkv) * hd;
    for (int i = lane; i < hd; i += 32) dst[i] = x[i];
    return;
  }
  const bool is_q = h < nh;
  const float* w = is_q ? qn : kn;
  float ss = 0.f;
  for (int i = lane; i < hd; i += 32) ss = __fmaf_rn(x[i], x[i], ss);
  ss = warp_sum(ss);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(hd) + eps);
  float* dst = is_q ? x : kc + pos * KW + int64_t(h - nh) * hd;
  const int half = hd / 2;
  // Lane reads and writes only its own pairs (i, i + half), after the sum above.
  for (int i = lane; i < half; i += 32) {
    const double a = double(pos) * pow(theta, -2.0 * i / hd);
    const float c = static_cast<float>(cos(a)), s = static_cast<float>(sin(a));
    const float x0 = (x[i] * inv) * w[i], x1 = (x[i + half] * inv) * w[i + half];
    dst[i] = x0 * c - x1 * s;
    dst[i + half] = x1 * c + x0 * s;
  }
}

// One block per (row, head): scores, a max/exp/sum softmax, then out[i] = sum_s (p_s / sum) v_s[i].
__global__ void attention_kernel(const float* __restrict__ qkv, int T, int nh, int nkv, int hd, int64_t pos0,
                                 const float* __restrict__ kc, const float* __restrict__ vc, float* __restrict__ scores,
                                 float* __restrict__ out) {
  __shared__ float red[32];
  extern __shared__ float qs[];
  const int t = blockIdx.x / nh, h = blockIdx.x % nh, kvh = h / (nh / nkv);
  const int heads_all = nh + 2 * nkv;
  const float* q = qkv + int64_t(t) * heads_all * hd + int64_t(h) * hd;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) qs[i] = q[i];
  __syncthreads();
  const int64_t ctx = pos0 + t + 1, KW = int64_t(nkv) * hd;
  const int64_t ctx_cap = pos0 + T;
  float* p = scores + int64_t(blockIdx.x) * ctx_cap;
  const float scale = 1.0f / sqrtf(static_cast<float>(hd));
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < ctx; s += blockDim.x) {
    const float* k = kc + s * KW + int64_t(kvh) * hd;
    float a = 0.f;
    for (int i = 0; i < hd; ++i) a += qs[i] * k[i];
    a *= scale;
    p[s] = a;
    mx = fmaxf(mx, a);
  }
  mx = block_max(mx, red);
  float sum = 0.f;
  for (int64_t s = threadIdx.x; s < ctx; s += blockDim.x) {
    const float e = expf(p[s] - mx);
    p[s] = e;
    sum += e;
  }
  sum = block_sum(sum, red);
  __syncthreads();  // every p[s] written before any thread reads all of them
  float* o = out + int64_t(t) * nh * hd + int64_t(h) * hd;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    float acc = 0.f;
    for (int64_t s = 0; s < ctx; ++s) acc += (p[s] / sum) * vc[s * KW + int64_t(kvh) * hd + i];
    o[i] = acc;
  }
}

__global__ void silu_gate_kernel(const float* __restrict__ gu, int T, int64_t I, float* __restrict__ h) {
  const int64_t n = int64_t(T) * I;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / I, j = i % I;
    const float g = gu[t * 2 * I + j], u = gu[t * 2 * I + I + j];
    h[i] = (g * (1.0f / (1.0f + expf(-g)))) * u;
  }
}

__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

// One block: each thread keeps its first maximum, then pairs meet by (larger value, lower index).
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ out) {
  __shared__ float sv[1024];
  __shared__ int32_t si[1024];
  float best = -INFINITY;
  int32_t bi = -1;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    if (v == v && (bi < 0 || v > best)) {  // NaN never wins
      best = v;
      bi = static_cast<int32_t>(i);
    }
  }
  sv[threadIdx.x] = best;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      const float v2 = sv[threadIdx.x + stride];
      const int32_t i2 = si[threadIdx.x + stride];
      const int32_t i1 = si[threadIdx.x];
      if (i2 >= 0 && (i1 < 0 || v2 > sv[threadIdx.x] || (v2 == sv[threadIdx.x] && i2 < i1))) {
        sv[threadIdx.x] = v2;
        si[threadIdx.x] = i2;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = si[0] < 0 ? 0 : si[0];
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_random_kernel(uint16_t* __restrict__ w, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ull + uint64_t(i));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    w[i] = static_cast<uint16_t>(__float_as_uint((2.0f * u - 1.0f) * scale) >> 16);
  }
}

__global__ void fill_f32_kernel(float* __restrict__ x, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = v;
}

}  // namespace

void embed_rows(const void* dev_embed, int64_t hidden, const int32_t* dev_ids, int T, float* dev_x, Stream stream) {
  if (hidden <= 0 || T < 0) throw CudaError("qwen3::embed_rows: bad shape");
  if (T == 0) return;
  embed_kernel<<<blocks_for(int64_t(T) * hidden), kThreads, 0, as_stream(stream)>>>(
      static_cast<const uint16_t*>(dev_embed), hidden, dev_ids, T, dev_x);
  DELTAFIN_CUDA_LAUNCHED("qwen3 embed_kernel");
}

void qk_norm_rope_store(float* dev_qkv, int T, int heads, int kv_heads, int head_dim, const float* dev_q_norm,
                        const float* dev_k_norm, float eps, int64_t pos0, double theta, float* dev_k_cache,
                        float* dev_v_cache, Stream stream) {
  if (T < 0 || heads <= 0 || kv_heads <= 0 || heads % kv_heads || head_dim <= 0 || head_dim % 2)
    throw CudaError("qwen3::qk_norm_rope_store: bad shape (head_dim must be even)");
  if (T == 0) return;
  const int64_t warps = int64_t(T) * (heads + 2 * kv_heads);
  const int per_block = kThreads / 32;
  qk_norm_rope_kernel<<<static_cast<int>((warps + per_block - 1) / per_block), kThreads, 0, as_stream(stream)>>>(
      dev_qkv, T, heads, kv_heads, head_dim, dev_q_norm, dev_k_norm, eps, pos0, theta, dev_k_cache, dev_v_cache);
  DELTAFIN_CUDA_LAUNCHED("qwen3 qk_norm_rope_kernel");
}

void gqa_attention(const float* dev_qkv, int T, int heads, int kv_heads, int head_dim, int64_t pos0,
                   const float* dev_k_cache, const float* dev_v_cache, float* dev_scores, float* dev_out,
                   Stream stream) {
  if (T < 0 || heads <= 0 || kv_heads <= 0 || heads % kv_heads || head_dim <= 0 || pos0 < 0)
    throw CudaError("qwen3::gqa_attention: bad shape");
  if (T == 0) return;
  const int threads = 128;
  attention_kernel<<<T * heads, threads, size_t(head_dim) * sizeof(float), as_stream(stream)>>>(
      dev_qkv, T, heads, kv_heads, head_dim, pos0, dev_k_cache, dev_v_cache, dev_scores, dev_out);
  DELTAFIN_CUDA_LAUNCHED("qwen3 attention_kernel");
}

void silu_gate(const float* dev_gu, int T, int64_t inter, float* dev_h, Stream stream) {
  if (T < 0 || inter <= 0) throw CudaError("qwen3::silu_gate: bad shape");
  if (T == 0) return;
  silu_gate_kernel<<<blocks_for(int64_t(T) * inter), kThreads, 0, as_stream(stream)>>>(dev_gu, T, inter, dev_h);
  DELTAFIN_CUDA_LAUNCHED("qwen3 silu_gate_kernel");
}

void add_inplace(float* dev_x, const float* dev_y, int64_t n, Stream stream) {
  if (n <= 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(dev_x, dev_y, n);
  DELTAFIN_CUDA_LAUNCHED("qwen3 add_kernel");
}

void argmax(const float* dev_x, int64_t n, int32_t* dev_index, Stream stream) {
  if (n <= 0 || n > INT32_MAX) throw CudaError("qwen3::argmax: bad length");
  argmax_kernel<<<1, 1024, 0, as_stream(stream)>>>(dev_x, n, dev_index);
  DELTAFIN_CUDA_LAUNCHED("qwen3 argmax_kernel");
}

void copy_device(void* dev_dst, const void* dev_src, size_t bytes, Stream stream) {
  if (bytes) DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(dev_dst, dev_src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)));
}

void fill_random_bf16(void* dev_w, int64_t count, uint64_t seed, float scale, Stream stream) {
  if (count <= 0) return;
  fill_random_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(static_cast<uint16_t*>(dev_w), count, seed,
                                                                            scale);
  DELTAFIN_CUDA_LAUNCHED("qwen3 fill_random_kernel");
}

void fill_f32(float* dev_x, int64_t count, float value, Stream stream) {
  if (count <= 0) return;
  fill_f32_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(dev_x, count, value);
  DELTAFIN_CUDA_LAUNCHED("qwen3 fill_f32_kernel");
}

}  // namespace deltafin::cuda::qwen3
