// K3's matrix products in fp64 (BF16 or fp32 weights widened exactly), embedding rows, RMSNorm and
// the logits' one rounding.
#include <algorithm>

#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// Y = W . X: a warp computes kRows output rows for TT activation rows; lane l owns elements
// l*8 .. l*8+7 of every 256-wide tile of the width. Per tile the block stages the TT rows' x values
// in shared memory, transposed so that element e of every lane is one conflict-free row, and each
// staged value feeds kRows rows' sums from a register. Each output (o, t) is one fma chain over the
// tiles in order and a lane's 8 elements in order, then the warp's butterfly: the order depends on
// the width only, never on T, TT or kRows (batch invariant), and a row alone gets the same bits.
constexpr int kGemmWarps = 8;
constexpr int kTile = 256;  // elements of the width per tile: 32 lanes x 8

template <typename W>
struct Row8;
template <>
struct Row8<uint16_t> {  // BF16
  static __device__ __forceinline__ void load(const uint16_t* row, int64_t k, int64_t in, bool vec, double (&v)[8]) {
    if (vec && k + 8 <= in) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(row + k));
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[2 * i] = bf16_lo(w[i]);
        v[2 * i + 1] = bf16_hi(w[i]);
      }
      return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = k + e < in ? __uint_as_float(uint32_t(row[k + e]) << 16) : 0.0;
  }
};
template <>
struct Row8<float> {
  static __device__ __forceinline__ void load(const float* row, int64_t k, int64_t in, bool vec, double (&v)[8]) {
    if (vec && k + 8 <= in) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(row + k)),
                   b = __ldg(reinterpret_cast<const float4*>(row + k) + 1);
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
      return;
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = k + e < in ? row[k + e] : 0.0;
  }
};

template <typename W, int kRows, int TT>
__global__ void __launch_bounds__(kGemmWarps * 32)
    gemm64_kernel(const W* __restrict__ w, int64_t out, int64_t in, bool vec, const double* __restrict__ x, int64_t ldx,
                  int T, double* __restrict__ y, int64_t ldy) {
  pdl_enter();
  __shared__ double xs[TT][8][32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t o0 = (int64_t(blockIdx.x) * kGemmWarps + warp) * kRows;
  for (int t0 = 0; t0 < T; t0 += TT) {
    double acc[kRows][TT];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int t = 0; t < TT; ++t) acc[r][t] = 0.0;
    for (int64_t k0 = 0; k0 < in; k0 += kTile) {
      const int64_t k = k0 + lane * 8;
      double wv[kRows][8];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (o0 + r < out) Row8<W>::load(w + (o0 + r) * in, k, in, vec, wv[r]);
        else
#pragma unroll
          for (int e = 0; e < 8; ++e) wv[r][e] = 0.0;
      }
      __syncthreads();  // the last tile's values are used up
      for (int i = threadIdx.x; i < TT * kTile; i += kGemmWarps * 32) {
        const int t = i / kTile, kk = i % kTile;
        xs[t][kk % 8][kk / 8] = t0 + t < T && k0 + kk < in ? x[int64_t(t0 + t) * ldx + k0 + kk] : 0.0;
      }
      __syncthreads();
#pragma unroll
      for (int e = 0; e < 8; ++e)
#pragma unroll
        for (int t = 0; t < TT; ++t) {
          const double xv = xs[t][e][lane];
#pragma unroll
          for (int r = 0; r < kRows; ++r) acc[r][t] = __fma_rn(wv[r][e], xv, acc[r][t]);
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int t = 0; t < TT; ++t) {
        const double v = warp_sum(acc[r][t]);
        if (lane == 0 && o0 + r < out && t0 + t < T) y[int64_t(t0 + t) * ldy + o0 + r] = v;
      }
  }
}

// Rows per warp (never a result's order): wide matrices reuse each staged value for several rows
// (four at small T, two where the TT accumulators would not leave registers for four), narrow ones
// (routers, low-rank projections) keep one row per warp so that they still spread over the SMs.
constexpr int64_t kWideRows = 4096;

template <typename W, int kRows>
void launch_gemm(const W* w, int64_t out, int64_t in, bool vec, const double* x, int64_t ldx, int T, double* y,
                 int64_t ldy, cudaStream_t s) {
  const unsigned grid = static_cast<unsigned>((out + kGemmWarps * kRows - 1) / (kGemmWarps * kRows));
  const int threads = kGemmWarps * 32;
  if (T == 1)
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, kRows, 1>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
  else if (T == 2)
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, kRows, 2>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
  else if (T <= 4)
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, kRows, 4>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
  else if (T <= 8)
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, kRows, 8>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
  else
    DELTAFIN_CUDA_CHECK(launch(gemm64_kernel<W, kRows, 16>, grid, threads, 0, s, w, out, in, vec, x, ldx, T, y, ldy));
}

template <typename W>
void gemm_typed(const W* w, int64_t out, int64_t in, const double* x, int64_t ldx, int T, double* y, int64_t ldy,
                cudaStream_t s) {
  const bool vec = in % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  if (out >= kWideRows && T <= 4) launch_gemm<W, 4>(w, out, in, vec, x, ldx, T, y, ldy, s);
  else if (out >= kWideRows) launch_gemm<W, 2>(w, out, in, vec, x, ldx, T, y, ldy, s);
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
