// K3's matrix products in fp64 (BF16 or fp32 weights widened exactly), embedding rows, RMSNorm and
// the logits' one rounding.
#include <algorithm>

#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// Y = W . X on the fp64 tensor cores (mma m8n8k4: D[8 rows][8 columns] += A[8][4] . B[4][8]). The
// weight rows are A's rows, the activation rows B's columns. The width is cut into chunks of 32;
// the block's kSplit warps take chunks w, w + kSplit, ... (together a contiguous 512-byte span of
// each BF16 row per step) and a warp's lane (row r = lane / 4, group q = lane % 4) loads the 8
// elements q*8 .. q*8+7 of its row's chunk, which feed step s = 0..7 of the chunk: A[r][q] = W[r][q*8
// + s], B[q][n] = X[n][q*8 + s]. Each output (o, t) is therefore: per warp, one MMA accumulation over
// its chunks and steps in order; then the warps' partial sums added in warp order. That order depends
// on the width only, never on T, on which column a row lands in or on how many row tiles a warp takes
// (batch invariant), and no shuffle or atomic is involved.
//
// BF16 weights become doubles by two shifts and a mask each: the 15 exponent and mantissa bits at
// bits 13..27 of the high word are the weight times 2^-896 exactly (zero and BF16's subnormals
// included). The activations are taken times 2^769 and the sums times 2^127 at the end, so every
// product and partial sum is the unscaled one times 2^-127, an exact power of two: the same
// roundings as the unscaled fp64 arithmetic while |x| < 2^255 and the sums stay above 2^-895.
constexpr int kSplit = 8;   // warps per block, each a slice of the width's chunks
constexpr int kChunk = 32;  // width elements per warp step: 4 lane groups x 8

__device__ __forceinline__ void dmma(double& d0, double& d1, double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
}

template <typename W>
struct Chunk8;
template <>
struct Chunk8<uint16_t> {  // 8 BF16 weights
  static constexpr double kXScale = 0x1p769, kYScale = 0x1p127;
  uint4 q;
  __device__ __forceinline__ void load(const uint16_t* row, int64_t k, int64_t in, bool vec, bool live) {
    if (live && vec && k + 8 <= in) {
      q = __ldg(reinterpret_cast<const uint4*>(row + k));
      return;
    }
    uint32_t h[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) h[e] = live && k + e < in ? row[k + e] : 0u;
    q = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
  }
  // Weight s (0..7; a constant once unrolled) times 2^-896.
  __device__ __forceinline__ double at(int s) const {
    const uint32_t u = s < 2 ? q.x : s < 4 ? q.y : s < 6 ? q.z : q.w;
    const uint32_t hi = s % 2 == 0 ? ((u << 13) & 0x0fffe000u) | ((u << 16) & 0x80000000u)
                                   : ((u >> 3) & 0x0fffe000u) | (u & 0x80000000u);
    return __hiloint2double(static_cast<int>(hi), 0);
  }
};
template <>
struct Chunk8<float> {  // 8 fp32 weights, widened as they are
  static constexpr double kXScale = 1.0, kYScale = 1.0;
  float4 a, b;
  __device__ __forceinline__ void load(const float* row, int64_t k, int64_t in, bool vec, bool live) {
    if (live && vec && k + 8 <= in) {
      a = __ldg(reinterpret_cast<const float4*>(row + k));
      b = __ldg(reinterpret_cast<const float4*>(row + k) + 1);
      return;
    }
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = live && k + e < in ? row[k + e] : 0.0f;
    a = make_float4(v[0], v[1], v[2], v[3]);
    b = make_float4(v[4], v[5], v[6], v[7]);
  }
  __device__ __forceinline__ double at(int s) const {
    const float4& h = s < 4 ? a : b;
    const int i = s % 4;
    return static_cast<double>(i == 0 ? h.x : i == 1 ? h.y : i == 2 ? h.z : h.w);
  }
};

// A block computes MT row tiles of 8 rows for every activation row, NT column tiles of 8 at a time.
// A warp takes its chunks D at a time (D = 4 / MT: every lane keeps four 16-byte weight loads per
// round, so narrow matrices, with fewer warps over the GPU, have as many bytes in flight as wide ones)
// and loads the next round's while it multiplies this one's; the chunks are multiplied in the same
// order whatever D is.
template <typename W, int MT, int NT>
__global__ void __launch_bounds__(kSplit * 32)
    gemm64_kernel(const W* __restrict__ w, int64_t out, int64_t in, bool vec, const double* __restrict__ x, int64_t ldx,
                  int T, double* __restrict__ y, int64_t ldy) {
  pdl_enter();
  using C8 = Chunk8<W>;
  constexpr int D = 4 / MT;
  __shared__ double part[kSplit][MT][NT][2][32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
  const int64_t o0 = int64_t(blockIdx.x) * 8 * MT, chunks = (in + kChunk - 1) / kChunk;
  // Chunk j of the round starting at chunk c: c + j * kSplit.
  auto load_round = [&](C8(&wt)[D][MT], int64_t c) {
#pragma unroll
    for (int j = 0; j < D; ++j)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int64_t cj = c + j * kSplit;
        wt[j][mt].load(w + (o0 + mt * 8 + r) * in, cj * kChunk + q * 8, in, vec, cj < chunks && o0 + mt * 8 + r < out);
      }
  };
  for (int t0 = 0; t0 < T; t0 += 8 * NT) {
    double d[MT][NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) d[mt][nt][0] = d[mt][nt][1] = 0.0;
    C8 cur[D][MT];
    load_round(cur, warp);
    for (int64_t c = warp; c < chunks; c += int64_t(kSplit) * D) {
      C8 nxt[D][MT];
      load_round(nxt, c + int64_t(kSplit) * D);
#pragma unroll
      for (int j = 0; j < D; ++j) {
        const int64_t cj = c + j * kSplit;
        if (cj >= chunks) break;
        const int64_t k = cj * kChunk + q * 8;
        double xb[NT][8];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int t = t0 + nt * 8 + r;
          const double* xr = x + int64_t(t) * ldx + k;
#pragma unroll
          for (int s = 0; s < 8; ++s) xb[nt][s] = t < T && k + s < in ? __ldg(xr + s) * C8::kXScale : 0.0;
        }
#pragma unroll
        for (int s = 0; s < 8; ++s)
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            const double a = cur[j][mt].at(s);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) dmma(d[mt][nt][0], d[mt][nt][1], a, xb[nt][s]);
          }
      }
#pragma unroll
      for (int j = 0; j < D; ++j)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) cur[j][mt] = nxt[j][mt];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        part[warp][mt][nt][0][lane] = d[mt][nt][0];
        part[warp][mt][nt][1][lane] = d[mt][nt][1];
      }
    __syncthreads();
    for (int j = threadIdx.x; j < MT * NT * 64; j += kSplit * 32) {
      const int ln = j % 32, i = (j / 32) % 2, nt = (j / 64) % NT, mt = j / (64 * NT);
      double v = part[0][mt][nt][i][ln];
#pragma unroll
      for (int p = 1; p < kSplit; ++p) v += part[p][mt][nt][i][ln];
      const int64_t o = o0 + mt * 8 + (ln >> 2);
      const int t = t0 + nt * 8 + 2 * (ln & 3) + i;
      if (o < out && t < T) y[int64_t(t) * ldy + o] = v * C8::kYScale;
    }
    __syncthreads();  // the partial sums are read before the next columns overwrite them
  }
}

// Row tiles per block (never a result's order): wide matrices take four, so that one call's blocks
// fit the GPU at once with the next chunk's weights in flight; narrow ones (routers, low-rank
// projections) fewer, so that they still spread over the SMs.
template <typename W, int MT>
void launch_gemm(const W* w, int64_t out, int64_t in, bool vec, const double* x, int64_t ldx, int T, double* y,
                 int64_t ldy, cudaStream_t s) {
  const unsigned grid = static_cast<unsigned>((out + 8 * MT - 1) / (8 * MT));
  const int threads = kSplit * 32;
  if (T <= 8)
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, MT, 1>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
  else DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, MT, 2>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
}

template <typename W>
void gemm_typed(const W* w, int64_t out, int64_t in, const double* x, int64_t ldx, int T, double* y, int64_t ldy,
                cudaStream_t s) {
  const bool vec = in % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  if (out >= 4096) launch_gemm<W, 4>(w, out, in, vec, x, ldx, T, y, ldy, s);
  else if (out >= 1024) launch_gemm<W, 2>(w, out, in, vec, x, ldx, T, y, ldy, s);
  else launch_gemm<W, 1>(w, out, in, vec, x, ldx, T, y, ldy, s);
}

__global__ void gather_kernel(const void* table, bool bf16, int64_t cols, const int32_t* ids, double* y) {
  pdl_enter();
  const int t = blockIdx.y;
  const int64_t row = ids[t];
  for (int64_t j = blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += int64_t(gridDim.x) * blockDim.x)
    y[t * cols + j] = load_weight(table, bf16, row * cols + j);
}

// RMSNorm, one block per row: each thread sums its strided elements in order, the block's fixed
// tree adds them; y = x * (1 / sqrt(mean + eps)) * w as runtime/ops.cpp's fp64 rmsnorm.
constexpr int kNormThreads = 256;
__global__ void __launch_bounds__(kNormThreads)
    rmsnorm64_kernel(const double* x, int64_t ldx, const float* __restrict__ w, int64_t n, double eps, double* y,
                     int64_t ldy) {
  pdl_enter();
  __shared__ double warp_tot[kNormThreads / 32];
  const double* xr = x + blockIdx.x * ldx;
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) ss = __fma_rn(xr[i], xr[i], ss);
  const double inv = 1.0 / sqrt(block_sum<kNormThreads>(ss, warp_tot) / static_cast<double>(n) + eps);
  double* yr = y + blockIdx.x * ldy;
  // In place (y == x) is allowed: every element is read before it is written, by the same thread.
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) yr[i] = xr[i] * inv * static_cast<double>(w[i]);
}

__global__ void narrow_kernel(const double* x, float* y, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = static_cast<float>(x[i]);
}

}  // namespace

void gemm(const DevMat& w, const double* x, int64_t ldx, int T, double* y, int64_t ldy, Stream s) {
  if (T <= 0) return;
  if (w.bf16) gemm_typed(static_cast<const uint16_t*>(w.data), w.rows, w.cols, x, ldx, T, y, ldy, as_stream(s));
  else gemm_typed(static_cast<const float*>(w.data), w.rows, w.cols, x, ldx, T, y, ldy, as_stream(s));
}

void gather_rows(const DevMat& table, const int32_t* ids, int T, double* y, Stream s) {
  if (T <= 0) return;
  dim3 grid(blocks_for(table.cols, 256), T);
  DELTAFIN_CUDA_CHECK(launch(gather_kernel, grid, 256, 0, as_stream(s), table.data, table.bf16, table.cols, ids, y));
}

void rmsnorm(const double* x, int64_t ldx, const float* w, int64_t n, int T, double eps, double* y, int64_t ldy,
             Stream s) {
  if (n <= 0 || T < 0) throw CudaError("k3::rmsnorm: n must be positive and T non-negative");
  if (T == 0) return;
  DELTAFIN_CUDA_CHECK(launch(rmsnorm64_kernel, T, kNormThreads, 0, as_stream(s), x, ldx, w, n, eps, y, ldy));
}

void narrow(const double* x, float* y, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(narrow_kernel, grid_1d(n), 256, 0, as_stream(s), x, y, n));
}

}  // namespace deltafin::cuda::k3
