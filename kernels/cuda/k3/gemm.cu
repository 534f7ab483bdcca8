// K3's matrix products (BF16 through cuda::bf16_gemm, fp32 warp per row) and embedding rows.
#include <cstdlib>
#include <string>

#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

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
__global__ void __launch_bounds__(kRowThreads)
    bf16_row_block_kernel(const uint4* __restrict__ w, int64_t in, const float* __restrict__ x, int64_t ldx, int T,
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
// block-per-row FFMA kernel below kNarrowRows rows (on the H200 it matches the
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

}  // namespace

void gemm(const DevMat& w, const float* x, int64_t ldx, int T, float* y, int64_t ldy, Stream s) {
  if (T <= 0) return;
  if (w.bf16) {
    const int mode = row_gemv_mode();
    const bool rows_kernel = mode == kRowAll || (mode == kRowNarrow && w.rows < kNarrowRows);
    if (!rows_kernel || w.cols % 8 != 0 || ldx % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
        reinterpret_cast<uintptr_t>(w.data) % 16 != 0) {
      if (w.version_rows > 0)
        bf16_gemm_version(bf16_gemm_default_version(w.version_rows, w.cols), w.data, w.rows, w.cols, x, ldx, T, y, ldy,
                          s);
      else bf16_gemm(w.data, w.rows, w.cols, x, ldx, T, y, ldy, s);
      return;
    }
    const auto* wv = static_cast<const uint4*>(w.data);
    const unsigned grid = static_cast<unsigned>(w.rows);
    if (T == 1)
      DELTAFIN_CUDA_CHECK(
          launch(bf16_row_block_kernel<1>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else if (T == 2)
      DELTAFIN_CUDA_CHECK(
          launch(bf16_row_block_kernel<2>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else if (T <= 4)
      DELTAFIN_CUDA_CHECK(
          launch(bf16_row_block_kernel<4>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    else
      DELTAFIN_CUDA_CHECK(
          launch(bf16_row_block_kernel<8>, grid, kRowThreads, 0, as_stream(s), wv, w.cols, x, ldx, T, y, ldy));
    return;
  }
  DELTAFIN_CUDA_CHECK(launch(f32_rows_kernel, blocks_for(w.rows, 8), 256, 0, as_stream(s),
                             static_cast<const float*>(w.data), w.rows, w.cols, x, ldx, T, y, ldy));
}

void gather_rows(const DevMat& table, const int32_t* ids, int T, float* y, Stream s) {
  if (T <= 0) return;
  dim3 grid(blocks_for(table.cols, 256), T);
  DELTAFIN_CUDA_CHECK(launch(gather_kernel, grid, 256, 0, as_stream(s), table.data, table.bf16, table.cols, ids, y));
}

}  // namespace deltafin::cuda::k3
