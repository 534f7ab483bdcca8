#include "cuda/k3_cuda_ops.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

__device__ __forceinline__ float sigm(float x) { return 1.f / (1.f + expf(-x)); }

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// ---- generic ----

__global__ void f32_rows_kernel(const float* __restrict__ w, int64_t out, int64_t in, const float* __restrict__ x,
                                int64_t ldx, int T, float* __restrict__ y, int64_t ldy) {
  pdl_enter();
  const int64_t o = static_cast<int64_t>(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (o >= out) return;
  for (int t = 0; t < T; ++t) {
    float a = 0.f;
    for (int64_t i = lane; i < in; i += 32) a = __fmaf_rn(w[o * in + i], x[t * ldx + i], a);
    a = warp_sum(a);
    if (lane == 0) y[t * ldy + o] = a;
  }
}


// One block per weight row (BF16): each thread takes fixed 16-byte chunks of the row, warps meet in
// butterflies, warp totals are added in warp order. The order of every (row, t) sum depends on the
// width only, so the result is the same for any T (batch invariant). Gives narrow matrices (router,
// f_a, b_proj, q_a, kv_a) one block per row instead of a handful of warps for the whole matrix.
constexpr int kRowThreads = 256, kRowUnroll = 4;
template <int TT>
__global__ void __launch_bounds__(kRowThreads) bf16_row_block_kernel(const uint4* __restrict__ w, int64_t in,
                                                                   const float* __restrict__ x, int64_t ldx, int T,
                                                                   float* __restrict__ y, int64_t ldy) {
  pdl_enter();
  __shared__ float sh[kRowThreads / 32][TT];
  const int64_t o = blockIdx.x;
  const int64_t nch = in / 8;
  const uint4* wr = w + o * nch;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int t0 = 0; t0 < T; t0 += TT) {
    float acc[TT];
#pragma unroll
    for (int t = 0; t < TT; ++t) acc[t] = 0.f;
    for (int64_t c0 = threadIdx.x; c0 < nch; c0 += int64_t(kRowThreads) * kRowUnroll) {
      uint4 wv[kRowUnroll];
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        const int64_t c = c0 + int64_t(kRowThreads) * u;
        wv[u] = c < nch ? __ldg(wr + c) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        const int64_t c = c0 + int64_t(kRowThreads) * u;
        if (c >= nch) break;
#pragma unroll
        for (int t = 0; t < TT; ++t) {
          if (t0 + t >= T) break;
          const float4* xp = reinterpret_cast<const float4*>(x + (t0 + t) * ldx + c * 8);
          const float4 xa = __ldg(xp), xb = __ldg(xp + 1);
          float a = acc[t];
          a = __fmaf_rn(bf16_lo(wv[u].x), xa.x, a);
          a = __fmaf_rn(bf16_hi(wv[u].x), xa.y, a);
          a = __fmaf_rn(bf16_lo(wv[u].y), xa.z, a);
          a = __fmaf_rn(bf16_hi(wv[u].y), xa.w, a);
          a = __fmaf_rn(bf16_lo(wv[u].z), xb.x, a);
          a = __fmaf_rn(bf16_hi(wv[u].z), xb.y, a);
          a = __fmaf_rn(bf16_lo(wv[u].w), xb.z, a);
          a = __fmaf_rn(bf16_hi(wv[u].w), xb.w, a);
          acc[t] = a;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < TT; ++t) {
      const float v = warp_sum(acc[t]);
      if (lane == 0) sh[warp][t] = v;
    }
    __syncthreads();
    if (threadIdx.x < TT && t0 + int(threadIdx.x) < T) {
      float tot = 0.f;
#pragma unroll
      for (int k = 0; k < kRowThreads / 32; ++k) tot += sh[k][threadIdx.x];
      y[(t0 + threadIdx.x) * ldy + o] = tot;
    }
    __syncthreads();
  }
}

// Which GEMV serves a BF16 matrix. Default: the library's bf16_gemm for every matrix (its own shape
// policy picks a tensor-core version; below 1024 rows it splits the width over a cluster of blocks,
// which is what this file's block-per-row kernel was for). DELTAFIN_CUDA_ROW_GEMV=narrow: the
// block-per-row FFMA kernel below kNarrowRows rows (the session-2 policy; on the H200 it matches the
// default at T=1 and is 6-8% slower per layer at T=8), =all: that kernel everywhere, =off: the
// library everywhere (the default). Each choice depends on the matrix shape only, never on T.
enum RowGemvMode { kRowOff = 0, kRowNarrow = 1, kRowAll = 2 };
int row_gemv_mode() {
  static const int mode = [] {
    const char* e = std::getenv("DELTAFIN_CUDA_ROW_GEMV");
    if (!e) return static_cast<int>(kRowOff);
    const std::string v(e);
    return static_cast<int>(v == "all" ? kRowAll : v == "narrow" ? kRowNarrow : kRowOff);
  }();
  return mode;
}
constexpr int64_t kNarrowRows = 4096;

__global__ void gather_kernel(const void* table, bool bf16, int64_t cols, const int32_t* ids, float* y) {
  pdl_enter();
  const int t = blockIdx.y;
  const int64_t row = ids[t];
  for (int64_t j = blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += int64_t(gridDim.x) * blockDim.x)
    y[t * cols + j] = load_weight(table, bf16, row * cols + j);
}

// AttnRes in two launches: one block per (entry, row) scores the entries, then blocks of columns
// mix them. (One block per row did both and ran the entries one after another on one SM: ~17 us
// per call at T=1 for almost no bytes, ncu in PERFORMANCE.md.) Every score, the softmax and every
// output element are computed exactly as by that one block, so the bits are the same. Both kernels
// issue all of a thread's loads before the first sum that needs them (kResPer values of a row, up
// to kResGroup entries of a column): the loops before waited for each load in turn.
constexpr int kResThreads = 256;
constexpr int kResMixCols = 4 * kResThreads;  // output columns per mixing block
constexpr int kResPer = 32;                   // a row's values per thread held in registers (H <= 8192)
constexpr int kResGroup = 8;                  // entries whose values a mixing thread loads at once
__global__ void __launch_bounds__(kResThreads) attn_res_score_kernel(ResEntries e, const float* __restrict__ w, int H,
                                                                     float eps, float* __restrict__ scores) {
  pdl_enter();
  __shared__ float sh[kResThreads / 32];
  const int i = blockIdx.x;
  const int64_t t = blockIdx.y;
  const float* v = e.p[i] + t * H;
  float ss = 0.f, d = 0.f;
  if (H <= kResPer * kResThreads) {
    float x[kResPer], wv[kResPer];
#pragma unroll
    for (int k = 0; k < kResPer; ++k) {
      const int j = static_cast<int>(threadIdx.x) + k * kResThreads;
      x[k] = j < H ? v[j] : 0.f;
      wv[k] = j < H ? w[j] : 0.f;
    }
#pragma unroll
    for (int k = 0; k < kResPer; ++k)
      if (static_cast<int>(threadIdx.x) + k * kResThreads < H) ss = __fmaf_rn(x[k], x[k], ss);
    const float inv = 1.f / sqrtf(block_sum<kResThreads>(ss, sh) / static_cast<float>(H) + eps);
#pragma unroll
    for (int k = 0; k < kResPer; ++k)
      if (static_cast<int>(threadIdx.x) + k * kResThreads < H) d = __fmaf_rn(x[k] * inv, wv[k], d);
  } else {
    for (int j = threadIdx.x; j < H; j += kResThreads) ss = __fmaf_rn(v[j], v[j], ss);
    const float inv = 1.f / sqrtf(block_sum<kResThreads>(ss, sh) / static_cast<float>(H) + eps);
    for (int j = threadIdx.x; j < H; j += kResThreads) d = __fmaf_rn(v[j] * inv, w[j], d);
  }
  d = block_sum<kResThreads>(d, sh);
  if (threadIdx.x == 0) scores[t * kMaxResEntries + i] = d;
}

__global__ void __launch_bounds__(kResThreads) attn_res_kernel(ResEntries e, const float* __restrict__ scores, int H,
                                                               float* __restrict__ out) {
  pdl_enter();
  __shared__ float prob[kMaxResEntries];
  const int64_t t = blockIdx.y;
  if (static_cast<int>(threadIdx.x) < e.n) prob[threadIdx.x] = scores[t * kMaxResEntries + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float mx = prob[0];
    for (int i = 1; i < e.n; ++i) mx = fmaxf(mx, prob[i]);
    float sum = 0.f;
    for (int i = 0; i < e.n; ++i) {
      prob[i] = expf(prob[i] - mx);
      sum += prob[i];
    }
    for (int i = 0; i < e.n; ++i) prob[i] = prob[i] / sum;
  }
  __syncthreads();
  constexpr int kCols = kResMixCols / kResThreads;
  const int j0 = static_cast<int>(blockIdx.x) * kResMixCols + static_cast<int>(threadIdx.x);
  float o[kCols] = {};
  for (int i0 = 0; i0 < e.n; i0 += kResGroup) {
    float x[kResGroup][kCols];
#pragma unroll
    for (int u = 0; u < kResGroup; ++u)
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int j = j0 + c * kResThreads;
        x[u][c] = i0 + u < e.n && j < H ? e.p[i0 + u][t * H + j] : 0.f;
      }
#pragma unroll
    for (int u = 0; u < kResGroup; ++u)
      if (i0 + u < e.n)
#pragma unroll
        for (int c = 0; c < kCols; ++c) o[c] = __fmaf_rn(prob[i0 + u], x[u][c], o[c]);
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int j = j0 + c * kResThreads;
    if (j < H) out[t * H + j] = o[c];
  }
}

__global__ void copy_kernel(const float* a, float* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i];
}
__global__ void add_kernel(const float* a, const float* b, float* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] + b[i];
}
__global__ void add_sum_kernel(const float* a, const float* b, const float* c, float* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] + (b[i] + c[i]);
}
__global__ void mul_sigmoid_kernel(const float* a, const float* g, float* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] * sigm(g[i]);
}
__device__ __forceinline__ float situ_glu_at(float g, float u, float beta, float lbeta) {
  const float a = beta * tanhf(g / beta) * sigm(g);
  const float b = lbeta * tanhf(u / lbeta);
  return a * b;
}
__global__ void situ_rows_kernel(const float* gu, int64_t n, int64_t total, float beta, float lbeta, float* o) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / n, c = i % n;
    o[i] = situ_glu_at(gu[t * 2 * n + c], gu[t * 2 * n + n + c], beta, lbeta);
  }
}

unsigned grid_1d(int64_t n) { return static_cast<unsigned>(std::min<int64_t>(blocks_for(n, 256), 4096)); }

// ---- KDA ----

__global__ void kda_conv_kernel(const float* __restrict__ window, const float* __restrict__ raw, int T, int C, int K,
                                const float* tq, const float* tk, const float* tv, float* q, float* k, float* v) {
  pdl_enter();
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  const int which = blockIdx.y;
  if (ch >= C) return;
  const float* taps = (which == 0 ? tq : which == 1 ? tk : tv) + int64_t(ch) * K;
  float* out = which == 0 ? q : which == 1 ? k : v;
  const int K1 = K - 1;
  const float* win = window + int64_t(which) * K1 * C;
  for (int t = 0; t < T; ++t) {
    float acc = 0.f;
    for (int j = 0; j < K; ++j) {
      const int src = t + j;
      const float xv = src < K1 ? win[int64_t(src) * C + ch] : raw[(int64_t(src - K1) * 3 + which) * C + ch];
      acc = __fmaf_rn(taps[j], xv, acc);
    }
    out[int64_t(t) * C + ch] = acc * sigm(acc);
  }
}

__global__ void kda_window_kernel(const float* __restrict__ window, const float* __restrict__ raw, int n, int C, int K,
                                  float* __restrict__ nw) {
  pdl_enter();
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  const int which = blockIdx.y;
  if (ch >= C) return;
  const int K1 = K - 1;
  for (int r = 0; r < K1; ++r) {
    const int src = n + r;
    nw[(int64_t(which) * K1 + r) * C + ch] =
        src < K1 ? window[(int64_t(which) * K1 + src) * C + ch] : raw[(int64_t(src - K1) * 3 + which) * C + ch];
  }
}

__global__ void l2norm_heads_kernel(float* x, int d, float scale) {
  pdl_enter();
  float* v = x + int64_t(blockIdx.x) * d;  // one warp per (row, head)
  float ss = 0.f;
  for (int i = threadIdx.x; i < d; i += 32) ss = __fmaf_rn(v[i], v[i], ss);
  ss = warp_sum(ss);
  const float inv = 1.f / sqrtf(ss + 1e-6f);
  for (int i = threadIdx.x; i < d; i += 32) v[i] = (v[i] * inv) * scale;
}

__global__ void kda_gates_kernel(const float* fb, const float* dt_bias, const float* a_log, const float* braw, int T,
                                 int heads, int d, float lower, float* la, float* beta) {
  pdl_enter();
  const int64_t C = int64_t(heads) * d;
  const int64_t n = int64_t(T) * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t idx = i % C;
    const int h = static_cast<int>(idx / d);
    const float ea = expf(a_log[h]);
    la[i] = lower * sigm(ea * (fb[i] + dt_bias[idx]));
    if (idx % d == 0) beta[(i / C) * heads + h] = sigm(braw[(i / C) * heads + h]);
  }
}

// One thread per value column j, in blocks of kStepCols columns of one head (every column's
// recurrence is its own: the state's column j, the head's keys, queries and decays); the block's
// columns of the state live in shared memory for all T steps. Per column the arithmetic is
// runtime/kda_core.cpp's step_head, summed in key order. Many small blocks rather than one per
// head: reading the state in and out is most of the work at small T, and this spreads it over
// every SM with all of a thread's loads in flight at once.
constexpr int kStepCols = 32;
__global__ void __launch_bounds__(kStepCols) kda_step_kernel(float* S, int heads, int dk, int dv, int T,
                                                           const float* __restrict__ q, const float* __restrict__ k,
                                                           const float* __restrict__ v,
                                                           const float* __restrict__ log_alpha,
                                                           const float* __restrict__ beta, float* o) {
  pdl_enter();
  extern __shared__ float smem[];
  float* Ss = smem;                         // [dk][kStepCols]
  float* ea = Ss + int64_t(dk) * kStepCols;  // [dk]
  float* ks = ea + dk;                       // [dk]
  float* qs = ks + dk;                       // [dk]
  const int h = blockIdx.x, c = threadIdx.x, j = blockIdx.y * kStepCols + c;
  const bool live = j < dv;
  float* Sg = S + int64_t(h) * dk * dv + j;  // column j, row stride dv
#pragma unroll 32
  for (int i = 0; i < dk; ++i) Ss[i * kStepCols + c] = live ? Sg[int64_t(i) * dv] : 0.f;
  const int64_t qk = int64_t(heads) * dk, vw = int64_t(heads) * dv;
  for (int t = 0; t < T; ++t) {
    __syncthreads();
    for (int i = c; i < dk; i += kStepCols) {
      ea[i] = expf(log_alpha[t * qk + int64_t(h) * dk + i]);
      ks[i] = k[t * qk + int64_t(h) * dk + i];
      qs[i] = q[t * qk + int64_t(h) * dk + i];
    }
    __syncthreads();
    if (live) {
      float kS = 0.f;
      for (int i = 0; i < dk; ++i) {
        const float sv = Ss[i * kStepCols + c] * ea[i];
        Ss[i * kStepCols + c] = sv;
        kS = __fmaf_rn(ks[i], sv, kS);
      }
      const float u = beta[t * heads + h] * (v[t * vw + int64_t(h) * dv + j] - kS);
      float acc = 0.f;
      for (int i = 0; i < dk; ++i) {
        const float sv = __fmaf_rn(ks[i], u, Ss[i * kStepCols + c]);
        Ss[i * kStepCols + c] = sv;
        acc = __fmaf_rn(qs[i], sv, acc);
      }
      o[t * vw + int64_t(h) * dv + j] = acc;
    }
  }
  if (live) {
#pragma unroll 16
    for (int i = 0; i < dk; ++i) Sg[int64_t(i) * dv] = Ss[i * kStepCols + c];
  }
}

constexpr int kHeadThreads = 128;
__global__ void __launch_bounds__(kHeadThreads) kda_out_kernel(float* o, const float* gate, const float* w, int d, float eps) {
  pdl_enter();
  __shared__ float sh[kHeadThreads / 32];
  float* v = o + int64_t(blockIdx.x) * d;
  const float* g = gate + int64_t(blockIdx.x) * d;
  float ss = 0.f;
  for (int i = threadIdx.x; i < d; i += kHeadThreads) ss = __fmaf_rn(v[i], v[i], ss);
  const float inv = 1.f / sqrtf(block_sum<kHeadThreads>(ss, sh) / static_cast<float>(d) + eps);
  for (int i = threadIdx.x; i < d; i += kHeadThreads) v[i] = ((v[i] * inv) * w[i]) * sigm(g[i]);
}

// ---- MLA ----

// Weights by type, widened to fp32 exactly (BF16 bits are the high half of the float).
__device__ __forceinline__ float widen(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }
__device__ __forceinline__ float widen(float f) { return f; }

// Four consecutive weights of a row in one load: element c of the vector, widened.
template <typename W> struct Quad;
template <> struct Quad<uint16_t> {
  using Vec = uint2;
  static __device__ __forceinline__ float at(const Vec& v, int c) {
    const uint32_t w = c < 2 ? v.x : v.y;
    return (c & 1) ? bf16_hi(w) : bf16_lo(w);
  }
};
template <> struct Quad<float> {
  using Vec = float4;
  static __device__ __forceinline__ float at(const Vec& v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }
};

constexpr int kStageLoads = 8;  // loads per thread in flight while staging

// store(i, load(i)) for i < n over the block's threads, kStageLoads loads in flight per thread.
template <class L, class S>
__device__ __forceinline__ void stage_block(int n, L load, S store) {
  for (int i0 = threadIdx.x; i0 < n; i0 += kStageLoads * blockDim.x) {
    float v[kStageLoads];
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int i = i0 + u * blockDim.x;
      v[u] = i < n ? load(i) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int i = i0 + u * blockDim.x;
      if (i < n) store(i, v[u]);
    }
  }
}

// qabs = q_nope . kv_b's key rows. A block does kRows rows of one head, so each weight is read once
// for all of them; a thread owns kAbsorbCols consecutive columns (one vector load per weight row)
// and keeps kAbsorbLoads rows' loads in flight. Every output is still one fma chain over n in order.
// The grid is about one block per SM, so the launch bounds tell ptxas that registers are free:
// without that it trades the loads in flight for occupancy (38 registers instead of 96).
constexpr int kAbsorbThreads = 64;
constexpr int kAbsorbCols = 4;
template <typename W, int kRows>
__global__ void __launch_bounds__(kAbsorbThreads, 1) mla_absorb_kernel(const float* __restrict__ q, const W* __restrict__ kvb,
                                                                    int nh, int N, int P, int Vd, int R, int T,
                                                                    float* __restrict__ qabs) {
  pdl_enter();
  extern __shared__ float qs[];  // [kRows][N], zero past row T
  using Vec = typename Quad<W>::Vec;
  constexpr int kAbsorbLoads = 256 / sizeof(Vec);
  const int h = blockIdx.y, t0 = blockIdx.z * kRows;
  stage_block(
      kRows * N,
      [&](int i) {
        const int r = i / N, n = i % N;
        return t0 + r < T ? q[(int64_t(t0 + r) * nh + h) * (N + P) + n] : 0.f;
      },
      [&](int i, float v) { qs[i] = v; });
  __syncthreads();
  const int j = (blockIdx.x * kAbsorbThreads + threadIdx.x) * kAbsorbCols;
  if (j >= R) return;
  const W* wp = kvb + int64_t(h) * (N + Vd) * R + j;
  float acc[kRows][kAbsorbCols] = {};
  auto fma_row = [&](const Vec& w, int n) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float qv = qs[r * N + n];
#pragma unroll
      for (int c = 0; c < kAbsorbCols; ++c) acc[r][c] = __fmaf_rn(qv, Quad<W>::at(w, c), acc[r][c]);
    }
  };
  int n = 0;
  for (; n + kAbsorbLoads <= N; n += kAbsorbLoads) {
    Vec w[kAbsorbLoads];
#pragma unroll
    for (int u = 0; u < kAbsorbLoads; ++u) w[u] = *reinterpret_cast<const Vec*>(wp + int64_t(n + u) * R);
#pragma unroll
    for (int u = 0; u < kAbsorbLoads; ++u) fma_row(w[u], n + u);
  }
  for (; n < N; ++n) fma_row(*reinterpret_cast<const Vec*>(wp + int64_t(n) * R), n);
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (t0 + r < T)
#pragma unroll
      for (int c = 0; c < kAbsorbCols; ++c) qabs[(int64_t(t0 + r) * nh + h) * R + j + c] = acc[r][c];
}

// The same sums one column per thread, for shapes the vector loads do not fit.
template <typename W>
__global__ void mla_absorb_column_kernel(const float* q, const W* kvb, int nh, int N, int P, int Vd, int R, float* qabs) {
  pdl_enter();
  const int th = blockIdx.y;  // t * nh + h
  const int h = th % nh;
  const float* qn = q + int64_t(th) * (N + P);
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < R; j += gridDim.x * blockDim.x) {
    float acc = 0.f;
    for (int n = 0; n < N; ++n) acc = __fmaf_rn(qn[n], widen(kvb[(int64_t(h) * (N + Vd) + n) * R + j]), acc);
    qabs[int64_t(th) * R + j] = acc;
  }
}

// The attention over the latent cache in three launches, each output computed exactly as by one
// block per (row, head) walking the positions in order (session 7's kernel, kept in
// tests/cuda/previous_k3_kernels.cu; the checks compare bit for bit):
//   scores:  (qabs . lat_s + qrope . rope_s) * scale, every dot one fma chain per lane over
//            j = lane, lane + 32, ... then the warp's butterfly;
//   softmax: max and sum over positions s = thread, thread + 256, ... then the block's tree, and
//            each probability e / sum;
//   mix:     olat[j] = one fma chain over s in order of p_s * lat_s[j].
// Every cached row is shared by all heads, so a warp applies each row it loads to kAttHeads heads
// at once (an eighth of the cache reads), and the scores of a row are spread over many blocks. One
// block per (row, head) before left most SMs idle and waited on each load: at context 4096 an MLA
// layer took 3.6 ms at T=1, its attention all but 0.4 ms of it.
// Latency, not bandwidth, sets these kernels' time at short contexts (96 heads over a few hundred KB
// of cache): every load a thread issues is asked for before the first one is used (the staging of
// the queries and probabilities, the score and mix loops), and each warp scores one step of
// positions, so a block's warps wait on one round of loads at a time instead of several in turn
// (nsys on the H200, docs/PERFORMANCE.md, session 14). The order of every chain is unchanged.
constexpr int kAttHeads = 8;        // heads per block in the score and mix launches
constexpr int kScoreWarps = 8;
constexpr int kScorePos = 2;        // positions a warp scores at once
constexpr int kScoreChunk = kScoreWarps * kScorePos;  // positions per block and step: one per warp
constexpr int kScoreBlocks = 16;    // blocks per (row, head group): chunks are dealt round-robin
constexpr int kScoreBatch = 8;      // column steps (of 32) whose loads a lane issues together
constexpr int kSoftThreads = 256;   // fixes the softmax's summation order
constexpr int kMixThreads = 128;    // output columns per mix block
constexpr int kMixTile = 256;       // probabilities per head staged at once
constexpr int kMixBatch = 16;       // positions whose cached values a thread loads together (32: as fast at
                                    // context 64, 18-19% slower MLA layers at context 4096 and T=8)

__device__ __forceinline__ int64_t att_context(int64_t base, const int64_t* dev_base, int t) {
  return (dev_base ? *dev_base : base) + t + 1;
}

__global__ void __launch_bounds__(kScoreWarps * 32) mla_scores_kernel(const float* __restrict__ qabs, const float* __restrict__ q,
                                                                     const float* __restrict__ cache, int64_t base,
                                                                     const int64_t* dev_base, int nh, int N, int R, int P,
                                                                     float scale, float* __restrict__ scores, int64_t max_ctx) {
  pdl_enter();
  extern __shared__ float qs[];  // [kAttHeads][R + P]: absorbed query | rope query
  const int groups = (nh + kAttHeads - 1) / kAttHeads;
  const int t = blockIdx.y / groups, h0 = (blockIdx.y % groups) * kAttHeads;
  const int hn = min(kAttHeads, nh - h0);
  const int64_t ctx = att_context(base, dev_base, t);
  if (int64_t(blockIdx.x) * kScoreChunk >= ctx) return;
  const int W = R + P;
  stage_block(
      kAttHeads * W,
      [&](int i) {
        const int hh = i / W, j = i % W;
        const int64_t th = int64_t(t) * nh + h0 + hh;
        return hh >= hn ? 0.f : j < R ? qabs[th * R + j] : q[th * (N + P) + N + (j - R)];
      },
      [&](int i, float v) { qs[i] = v; });
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // acc[p][hh] += q[hh][j] * row_p[j] for j = j0 + lane, j0 + lane + 32, ... < j1, in that order.
  auto dots = [&](const float* row, int np, int j0, int j1, float (&acc)[kScorePos][kAttHeads]) {
    for (int jb = j0 + lane; jb < j1; jb += 32 * kScoreBatch) {
      float c[kScoreBatch][kScorePos];
#pragma unroll
      for (int u = 0; u < kScoreBatch; ++u)
#pragma unroll
        for (int p = 0; p < kScorePos; ++p) {
          const int j = jb + 32 * u;
          c[u][p] = p < np && j < j1 ? row[int64_t(p) * W + j] : 0.f;
        }
#pragma unroll
      for (int u = 0; u < kScoreBatch; ++u) {
        const int j = jb + 32 * u;
        if (j >= j1) break;
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) {
          const float qv = qs[hh * W + j];
#pragma unroll
          for (int p = 0; p < kScorePos; ++p) acc[p][hh] = __fmaf_rn(qv, c[u][p], acc[p][hh]);
        }
      }
    }
  };
  for (int64_t c0 = int64_t(blockIdx.x) * kScoreChunk; c0 < ctx; c0 += int64_t(gridDim.x) * kScoreChunk) {
    const int64_t c1 = min(ctx, c0 + kScoreChunk);
    for (int64_t s0 = c0 + warp * kScorePos; s0 < c1; s0 += kScoreWarps * kScorePos) {
      const int np = c1 - s0 < kScorePos ? static_cast<int>(c1 - s0) : kScorePos;
      const float* row = cache + s0 * W;
      float a[kScorePos][kAttHeads] = {}, r[kScorePos][kAttHeads] = {};
      dots(row, np, 0, R, a);
      dots(row, np, R, W, r);
#pragma unroll
      for (int p = 0; p < kScorePos; ++p)
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) {
          const float ap = warp_sum(a[p][hh]), rp = warp_sum(r[p][hh]);
          if (lane == 0 && p < np && hh < hn) scores[(int64_t(t) * nh + h0 + hh) * max_ctx + s0 + p] = (ap + rp) * scale;
        }
    }
  }
}

// One block per (row, head): the scores of positions 0 .. ctx-1 become probabilities in place.
__global__ void __launch_bounds__(kSoftThreads) mla_softmax_kernel(int64_t base, const int64_t* dev_base, int nh,
                                                                  float* __restrict__ scores, int64_t max_ctx) {
  pdl_enter();
  __shared__ float sh[kSoftThreads / 32];
  const int th = blockIdx.x;
  const int64_t ctx = att_context(base, dev_base, th / nh);
  float* sc = scores + int64_t(th) * max_ctx;
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) mx = fmaxf(mx, sc[s]);
  mx = block_max<kSoftThreads>(mx, sh);
  float sum = 0.f;
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) {
    const float e = expf(sc[s] - mx);
    sc[s] = e;
    sum += e;
  }
  sum = block_sum<kSoftThreads>(sum, sh);
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) sc[s] = sc[s] / sum;
}

// Column j of kAttHeads heads per thread: each cached value loaded once feeds every head's chain.
__global__ void __launch_bounds__(kMixThreads) mla_mix_kernel(const float* __restrict__ cache, int64_t base,
                                                             const int64_t* dev_base, int nh, int R, int P,
                                                             const float* __restrict__ probs, int64_t max_ctx,
                                                             float* __restrict__ olat) {
  pdl_enter();
  __shared__ float ps[kMixTile][kAttHeads];
  const int groups = (nh + kAttHeads - 1) / kAttHeads;
  const int t = blockIdx.y / groups, h0 = (blockIdx.y % groups) * kAttHeads;
  const int hn = min(kAttHeads, nh - h0);
  const int64_t ctx = att_context(base, dev_base, t);
  const int W = R + P;
  const int j = blockIdx.x * kMixThreads + threadIdx.x;
  const int jc = min(j, R - 1);  // past R: computed, never stored
  const float* pr = probs + (int64_t(t) * nh + h0) * max_ctx;
  float acc[kAttHeads] = {};
  for (int64_t s0 = 0; s0 < ctx; s0 += kMixTile) {
    const int n = ctx - s0 < kMixTile ? static_cast<int>(ctx - s0) : kMixTile;
    __syncthreads();
    stage_block(
        kMixTile * kAttHeads,
        [&](int i) {
          const int hh = i / kMixTile, k = i % kMixTile;  // neighbouring threads, neighbouring positions
          return hh < hn && k < n ? pr[int64_t(hh) * max_ctx + s0 + k] : 0.f;
        },
        [&](int i, float v) { ps[i % kMixTile][i / kMixTile] = v; });
    __syncthreads();
    const float* col = cache + s0 * W + jc;
    for (int k0 = 0; k0 < n; k0 += kMixBatch) {
      float c[kMixBatch];
#pragma unroll
      for (int u = 0; u < kMixBatch; ++u) c[u] = k0 + u < n ? col[int64_t(k0 + u) * W] : 0.f;
#pragma unroll
      for (int u = 0; u < kMixBatch; ++u) {
        if (k0 + u >= n) break;
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) acc[hh] = __fmaf_rn(ps[k0 + u][hh], c[u], acc[hh]);
      }
    }
  }
  if (j < R)
#pragma unroll
    for (int hh = 0; hh < kAttHeads; ++hh)
      if (hh < hn) olat[(int64_t(t) * nh + h0 + hh) * R + j] = acc[hh];
}

__global__ void rows_to_kernel(const float* __restrict__ src, int64_t width, float* __restrict__ dst,
                               const int64_t* __restrict__ dev_row) {
  pdl_enter();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < width) dst[(*dev_row + blockIdx.y) * width + i] = src[int64_t(blockIdx.y) * width + i];
}

// attn = kv_b's value rows . olat: a warp per (head, value column) and kRows rows, so each weight is
// read once for all of them; lane j sums j, j + 32, ... in order (all its loads issued first), then
// the warp's butterfly.
constexpr int kValueWarps = 8;
template <typename W, int kRows>
__global__ void __launch_bounds__(kValueWarps * 32) mla_value_kernel(const float* __restrict__ olat, const W* __restrict__ kvb,
                                                                     int nh, int N, int R, int Vd, int T,
                                                                     float* __restrict__ attn) {
  pdl_enter();
  constexpr int kValueLoads = 16;
  const int64_t hv = int64_t(blockIdx.x) * kValueWarps + (threadIdx.x >> 5);  // h * Vd + v
  const int lane = threadIdx.x & 31;
  if (hv >= int64_t(nh) * Vd) return;
  const int h = static_cast<int>(hv / Vd), vv = static_cast<int>(hv % Vd);
  const int t0 = blockIdx.y * kRows;
  const W* w = kvb + (int64_t(h) * (N + Vd) + N + vv) * R;
  const float* x[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) x[r] = olat + (int64_t(min(t0 + r, T - 1)) * nh + h) * R;  // rows past T: never stored
  float a[kRows] = {};
  int j0 = 0;
  for (; j0 + 32 * kValueLoads <= R; j0 += 32 * kValueLoads) {
    W wv[kValueLoads];
#pragma unroll
    for (int u = 0; u < kValueLoads; ++u) wv[u] = w[j0 + 32 * u + lane];
#pragma unroll
    for (int u = 0; u < kValueLoads; ++u)
#pragma unroll
      for (int r = 0; r < kRows; ++r) a[r] = __fmaf_rn(widen(wv[u]), x[r][j0 + 32 * u + lane], a[r]);
  }
  for (int j = j0 + lane; j < R; j += 32)
#pragma unroll
    for (int r = 0; r < kRows; ++r) a[r] = __fmaf_rn(widen(w[j]), x[r][j], a[r]);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    a[r] = warp_sum(a[r]);
    if (lane == 0 && t0 + r < T) attn[(int64_t(t0 + r) * nh + h) * Vd + vv] = a[r];
  }
}

// ---- MoE ----

// The router picks the top k of E keys (s + bias, ties to the lower id) with bitonic networks over
// warp registers instead of k rounds of block-wide argmax: each warp keeps its best kRouterList keys
// sorted, the warps' lists are merged pairwise, and warp 0 puts the first k in id order.
constexpr int kRouterThreads = 256;
constexpr int kRouterWarps = kRouterThreads / 32;
constexpr int kRouterSlots = 2;                 // keys per lane in a warp's list
constexpr int kRouterList = 32 * kRouterSlots;  // 64: the largest top_k
using RouterKey = unsigned long long;

// One unsigned compare orders the selection: the key's float order in the high word (-0 made +0
// first, as the two zeros are equal floats), the lower expert id first among equal keys in the low
// word. Every expert's key is above 0, the filler of lists with fewer than kRouterList experts.
__device__ __forceinline__ RouterKey router_key(float key, int e) {
  const uint32_t b = __float_as_uint(key + 0.f);
  const uint32_t ord = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (RouterKey(ord) << 32) | (0xffffffffu - uint32_t(e));
}

// One compare-exchange stage of a bitonic network over a warp's list (element r * 32 + lane in
// v[r]) with its partner i ^ j: blocks of `size` alternate direction, the whole list ends
// descending (ascending when `ascending`).
__device__ __forceinline__ void bitonic_stage(RouterKey (&v)[kRouterSlots], int size, int j, bool ascending) {
  const int lane = threadIdx.x & 31;
  RouterKey old[kRouterSlots];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) old[r] = v[r];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) {
    const RouterKey other = j >= 32 ? old[r ^ (j >> 5)] : __shfl_xor_sync(0xffffffffu, old[r], j);
    const int i = r * 32 + lane;
    const bool take_max = (((i & size) == 0) == ((i & j) == 0)) != ascending;
    v[r] = take_max ? (old[r] > other ? old[r] : other) : (old[r] < other ? old[r] : other);
  }
}

__device__ __forceinline__ void bitonic_sort(RouterKey (&v)[kRouterSlots], bool ascending) {
#pragma unroll
  for (int size = 2; size <= kRouterList; size <<= 1)
#pragma unroll
    for (int j = size >> 1; j > 0; j >>= 1) bitonic_stage(v, size, j, ascending);
}

// best (descending) becomes the top kRouterList of best and up (ascending), descending: the
// elementwise maximum of the two holds exactly those and is bitonic, so one merge sorts it.
__device__ __forceinline__ void bitonic_keep_top(RouterKey (&best)[kRouterSlots], const RouterKey (&up)[kRouterSlots]) {
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) best[r] = best[r] > up[r] ? best[r] : up[r];
#pragma unroll
  for (int j = kRouterList >> 1; j > 0; j >>= 1) bitonic_stage(best, kRouterList, j, false);
}

__global__ void __launch_bounds__(kRouterThreads) router_kernel(const float* logits, const float* bias, int E, int k,
                                                                bool renorm, float scaling, int32_t* ids, float* wts) {
  pdl_enter();
  extern __shared__ float s[];  // [E]
  __shared__ RouterKey lists[kRouterWarps][kRouterList];
  __shared__ float chosen_s[kRouterList];  // the chosen scores in ascending id order
  const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  RouterKey best[kRouterSlots] = {};
  for (int base = 0; base < E; base += kRouterThreads * kRouterSlots) {
    RouterKey v[kRouterSlots];
#pragma unroll
    for (int r = 0; r < kRouterSlots; ++r) {
      const int e = base + r * kRouterThreads + threadIdx.x;
      v[r] = 0;
      if (e < E) {
        s[e] = sigm(logits[int64_t(t) * E + e]);
        v[r] = router_key(s[e] + (bias ? bias[e] : 0.f), e);
      }
    }
    bitonic_sort(v, base != 0);
    if (base == 0) {
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) best[r] = v[r];
    } else {
      bitonic_keep_top(best, v);
    }
  }
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) lists[warp][r * 32 + lane] = best[r];
  __syncthreads();  // also publishes s
  for (int step = 1; step < kRouterWarps; step <<= 1) {
    if (warp % (2 * step) == 0) {
      RouterKey up[kRouterSlots];
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) up[r] = lists[warp + step][kRouterList - 1 - (r * 32 + lane)];
      bitonic_keep_top(best, up);
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) lists[warp][r * 32 + lane] = best[r];
    }
    __syncthreads();
  }
  if (warp != 0) return;
  // The first k of warp 0's list are the chosen experts; each one's place in ascending id order is
  // the number of chosen ids below its own.
  uint32_t id[kRouterSlots];
  int rank[kRouterSlots];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) {
    id[r] = 0xffffffffu - uint32_t(best[r]);
    rank[r] = 0;
  }
#pragma unroll
  for (int r2 = 0; r2 < kRouterSlots; ++r2)
    for (int src = 0; src < 32; ++src) {
      const uint32_t other = __shfl_sync(0xffffffffu, id[r2], src);
      if (r2 * 32 + src < k) {
#pragma unroll
        for (int r = 0; r < kRouterSlots; ++r) rank[r] += other < id[r] ? 1 : 0;
      }
    }
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r)
    if (r * 32 + lane < k) {
      chosen_s[rank[r]] = s[id[r]];
      ids[t * k + rank[r]] = int32_t(id[r]);
    }
  __syncwarp();
  float sum = 0.f;
  for (int i = 0; i < k; ++i) sum += chosen_s[i];  // ascending expert id: the fixed summation order
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r)
    if (r * 32 + lane < k) {
      const float sc = s[id[r]];
      wts[t * k + rank[r]] = (renorm ? sc / (sum + 1e-20f) : sc) * scaling;
    }
}

template <typename W, int kRows>
void launch_absorb(const float* q, const W* w, int T, int nh, int N, int P, int Vd, int R, float* qabs, cudaStream_t s) {
  const dim3 grid(blocks_for(R, kAbsorbThreads * kAbsorbCols), nh, (T + kRows - 1) / kRows);
  const size_t smem = size_t(kRows) * N * sizeof(float);
  DELTAFIN_CUDA_CHECK(launch(mla_absorb_kernel<W, kRows>, grid, kAbsorbThreads, smem, s, q, w, nh, N, P, Vd, R, T, qabs));
}

// Rows per block by T, as the BF16 row kernels pick theirs; a row's sums are the same in each.
template <typename W>
void absorb_rows(const float* q, const void* data, int T, int nh, int N, int P, int Vd, int R, float* qabs, cudaStream_t s) {
  const W* w = static_cast<const W*>(data);
  const bool vectors = R % kAbsorbCols == 0 && reinterpret_cast<uintptr_t>(data) % (kAbsorbCols * sizeof(W)) == 0 &&
                       size_t(8) * N * sizeof(float) <= 48 * 1024;
  if (!vectors) {
    DELTAFIN_CUDA_CHECK(launch(mla_absorb_column_kernel<W>, dim3(blocks_for(R, 128), T * nh), 128, 0, s, q, w, nh, N, P, Vd, R, qabs));
    return;
  }
  if (T == 1) launch_absorb<W, 1>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else if (T == 2) launch_absorb<W, 2>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else if (T <= 4) launch_absorb<W, 4>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else launch_absorb<W, 8>(q, w, T, nh, N, P, Vd, R, qabs, s);
}

template <typename W, int kRows>
void launch_value(const float* olat, const W* w, int T, int nh, int N, int R, int Vd, float* attn, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((int64_t(nh) * Vd + kValueWarps - 1) / kValueWarps), (T + kRows - 1) / kRows);
  DELTAFIN_CUDA_CHECK(launch(mla_value_kernel<W, kRows>, grid, kValueWarps * 32, 0, s, olat, w, nh, N, R, Vd, T, attn));
}

template <typename W>
void value_rows(const float* olat, const void* data, int T, int nh, int N, int R, int Vd, float* attn, cudaStream_t s) {
  const W* w = static_cast<const W*>(data);
  if (T == 1) launch_value<W, 1>(olat, w, T, nh, N, R, Vd, attn, s);
  else if (T == 2) launch_value<W, 2>(olat, w, T, nh, N, R, Vd, attn, s);
  else if (T <= 4) launch_value<W, 4>(olat, w, T, nh, N, R, Vd, attn, s);
  else launch_value<W, 8>(olat, w, T, nh, N, R, Vd, attn, s);
}

}  // namespace

void gemm(const DevMat& w, const float* x, int64_t ldx, int T, float* y, int64_t ldy, Stream s) {
  if (T <= 0) return;
  if (w.bf16) {
    const int mode = row_gemv_mode();
    const bool rows_kernel = mode == kRowAll || (mode == kRowNarrow && w.rows < kNarrowRows);
    if (!rows_kernel || w.cols % 8 != 0 || ldx % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(w.data) % 16 != 0) {
      if (w.version_rows > 0)
        bf16_gemm_version(bf16_gemm_default_version(w.version_rows, w.cols), w.data, w.rows, w.cols, x, ldx, T, y, ldy, s);
      else
        bf16_gemm(w.data, w.rows, w.cols, x, ldx, T, y, ldy, s);
      return;
    }
    const auto* wv = static_cast<const uint4*>(w.data);
    const unsigned grid = static_cast<unsigned>(w.rows);
    if (T == 1) DELTAFIN_CUDA_CHECK(launch(bf16_row_block_kernel<1>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else if (T == 2) DELTAFIN_CUDA_CHECK(launch(bf16_row_block_kernel<2>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else if (T <= 4) DELTAFIN_CUDA_CHECK(launch(bf16_row_block_kernel<4>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else DELTAFIN_CUDA_CHECK(launch(bf16_row_block_kernel<8>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    return;
  }
  DELTAFIN_CUDA_CHECK(launch(f32_rows_kernel, blocks_for(w.rows, 8), 256, 0, as_stream(s), static_cast<const float*>(w.data), w.rows, w.cols, x,
                                                                  ldx, T, y, ldy));
}

void gather_rows(const DevMat& table, const int32_t* ids, int T, float* y, Stream s) {
  if (T <= 0) return;
  dim3 grid(blocks_for(table.cols, 256), T);
  DELTAFIN_CUDA_CHECK(launch(gather_kernel, grid, 256, 0, as_stream(s), table.data, table.bf16, table.cols, ids, y));
}

void attn_res_mix(const ResEntries& e, const float* w, int T, int H, float eps, float* scratch, float* out, Stream s) {
  if (e.n < 1 || e.n > kMaxResEntries) throw CudaError("attn_res_mix: 1.." + std::to_string(kMaxResEntries) + " entries");
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(attn_res_score_kernel, dim3(e.n, T), kResThreads, 0, as_stream(s), e, w, H, eps, scratch));
  DELTAFIN_CUDA_CHECK(launch(attn_res_kernel, dim3((H + kResMixCols - 1) / kResMixCols, T), kResThreads, 0, as_stream(s), e, scratch, H, out));
}

void copy(const float* src, float* dst, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(copy_kernel, grid_1d(n), 256, 0, as_stream(s), src, dst, n));
}

void add(const float* a, const float* b, float* out, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(add_kernel, grid_1d(n), 256, 0, as_stream(s), a, b, out, n));
}

void add_sum(const float* a, const float* b, const float* c, float* out, int64_t n, Stream s) {
  if (n <= 0) return;
  if (!c) return add(a, b, out, n, s);
  DELTAFIN_CUDA_CHECK(launch(add_sum_kernel, grid_1d(n), 256, 0, as_stream(s), a, b, c, out, n));
}

void mul_sigmoid(const float* a, const float* g, float* out, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(mul_sigmoid_kernel, grid_1d(n), 256, 0, as_stream(s), a, g, out, n));
}

void situ_glu_rows(const float* gu, int T, int64_t n, float beta, float lbeta, float* out, Stream s) {
  if (T <= 0 || n <= 0) return;
  const int64_t total = int64_t(T) * n;
  DELTAFIN_CUDA_CHECK(launch(situ_rows_kernel, grid_1d(total), 256, 0, as_stream(s), gu, n, total, beta, lbeta, out));
}

void kda_conv(const float* window, const float* raw, int T, int C, int K, const float* tq, const float* tk,
              const float* tv, float* q, float* k, float* v, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_conv_kernel, dim3(blocks_for(C, 128), 3), 128, 0, as_stream(s), window, raw, T, C, K, tq, tk, tv, q, k, v));
}

void kda_window_after(const float* window, const float* raw, int n, int C, int K, float* nw, Stream s) {
  DELTAFIN_CUDA_CHECK(launch(kda_window_kernel, dim3(blocks_for(C, 128), 3), 128, 0, as_stream(s), window, raw, n, C, K, nw));
}

void l2norm_heads(float* x, int T, int heads, int d, float scale, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(l2norm_heads_kernel, T * heads, 32, 0, as_stream(s), x, d, scale));
}

void kda_gates(const float* fb, const float* dt_bias, const float* a_log, const float* braw, int T, int heads, int d,
               float lower, float* la, float* beta, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_gates_kernel, grid_1d(int64_t(T) * heads * d), 256, 0, as_stream(s), fb, dt_bias, a_log, braw, T, heads, d,
                                                                             lower, la, beta));
}

void kda_recurrent(float* S, int heads, int dk, int dv, int T, const float* q, const float* k, const float* v,
                   const float* log_alpha, const float* beta, float* o, Stream s) {
  if (T <= 0) return;
  const size_t smem = (size_t(dk) * kStepCols + 3 * size_t(dk)) * sizeof(float);
  static size_t opted = 48 * 1024;
  if (smem > opted) {
    DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(kda_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    opted = smem;
  }
  const dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>((dv + kStepCols - 1) / kStepCols));
  DELTAFIN_CUDA_CHECK(launch(kda_step_kernel, grid, kStepCols, smem, as_stream(s), S, heads, dk, dv, T, q, k, v, log_alpha, beta, o));
}

void kda_out_norm_gate(float* o, const float* gate, const float* w, int T, int heads, int d, float eps, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_out_kernel, T * heads, kHeadThreads, 0, as_stream(s), o, gate, w, d, eps));
}

void mla_absorb_q(const float* q, const DevMat& kv_b, int T, int nh, int N, int P, int Vd, float* qabs, Stream s) {
  if (T <= 0) return;
  const int R = static_cast<int>(kv_b.cols);
  if (kv_b.bf16) absorb_rows<uint16_t>(q, kv_b.data, T, nh, N, P, Vd, R, qabs, as_stream(s));
  else absorb_rows<float>(q, kv_b.data, T, nh, N, P, Vd, R, qabs, as_stream(s));
}

namespace {
void attend(const float* qabs, const float* q, const float* cache, int64_t base, const int64_t* dev_base, int T, int nh, int N,
            int R, int P, float scale, float* scores, int64_t max_ctx, float* olat, cudaStream_t s) {
  const int groups = (nh + kAttHeads - 1) / kAttHeads;
  const size_t smem = size_t(kAttHeads) * (R + P) * sizeof(float);
  static size_t opted = 48 * 1024;
  if (smem > opted) {
    DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(mla_scores_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    opted = smem;
  }
  const unsigned chunks = static_cast<unsigned>(std::min<int64_t>(kScoreBlocks, (max_ctx + kScoreChunk - 1) / kScoreChunk));
  DELTAFIN_CUDA_CHECK(launch(mla_scores_kernel, dim3(chunks, T * groups), kScoreWarps * 32, smem, s, qabs, q, cache, base,
                             dev_base, nh, N, R, P, scale, scores, max_ctx));
  DELTAFIN_CUDA_CHECK(launch(mla_softmax_kernel, T * nh, kSoftThreads, 0, s, base, dev_base, nh, scores, max_ctx));
  DELTAFIN_CUDA_CHECK(launch(mla_mix_kernel, dim3(blocks_for(R, kMixThreads), T * groups), kMixThreads, 0, s, cache, base,
                             dev_base, nh, R, P, static_cast<const float*>(scores), max_ctx, olat));
}
}  // namespace

void mla_attend(const float* qabs, const float* q, const float* cache, int64_t base, int T, int nh, int N, int R, int P,
                float scale, float* scores, int64_t max_ctx, float* olat, Stream s) {
  if (T <= 0) return;
  if (base + T > max_ctx) throw CudaError("mla_attend: context beyond the score scratch");
  attend(qabs, q, cache, base, nullptr, T, nh, N, R, P, scale, scores, max_ctx, olat, as_stream(s));
}

void mla_attend_at(const float* qabs, const float* q, const float* cache, const int64_t* dev_base, int T, int nh, int N,
                   int R, int P, float scale, float* scores, int64_t max_ctx, float* olat, Stream s) {
  if (T <= 0) return;
  attend(qabs, q, cache, 0, dev_base, T, nh, N, R, P, scale, scores, max_ctx, olat, as_stream(s));
}

void rows_to_at(const float* src, int T, int64_t width, float* dst, const int64_t* dev_row, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(rows_to_kernel, dim3(blocks_for(width, 256), T), 256, 0, as_stream(s), src, width, dst, dev_row));
}

void mla_value(const float* olat, const DevMat& kv_b, int T, int nh, int N, int R, int Vd, float* attn, Stream s) {
  if (T <= 0) return;
  if (kv_b.bf16) value_rows<uint16_t>(olat, kv_b.data, T, nh, N, R, Vd, attn, as_stream(s));
  else value_rows<float>(olat, kv_b.data, T, nh, N, R, Vd, attn, as_stream(s));
}

void router_select(const float* logits, const float* bias, int T, int E, int k, bool renormalize, float scaling,
                   int32_t* ids, float* weights, Stream s) {
  if (T <= 0) return;
  if (k < 1 || k > 64 || k > E) throw CudaError("router_select: top_k must be 1..64 and at most the expert count");
  if (size_t(2) * E * sizeof(float) > 48 * 1024) throw CudaError("router_select: too many experts for shared memory");
  DELTAFIN_CUDA_CHECK(launch(router_kernel, T, kRouterThreads, size_t(E) * sizeof(float), as_stream(s), logits, bias, E, k, renormalize, scaling, ids, weights));
}

}  // namespace deltafin::cuda::k3
