// BF16 weights x fp32 rows with fp32 accumulation, batch invariant by construction: a warp owns
// whole output elements, lane l always sums the 16-byte chunks l, l+32, l+64, ... of a weight row in
// that order, and the 32 lane sums meet in one fixed butterfly. None of this depends on T or on
// which other rows share the pass (cuBLAS picks algorithms and split-K by shape, so it cannot
// promise that). Memory-bound at small T: each weight byte is read once per group of TT rows.
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

constexpr int kWarps = 8;   // warps per block
constexpr int kRowsPerWarp = 4;  // weight rows one warp reduces together (sharing each x load)
constexpr int kUnroll = 4;  // chunks per lane in flight before the first use

template <int TT>
__global__ void __launch_bounds__(kWarps * 32) bf16_rows_kernel(const uint4* __restrict__ w, int64_t out, int64_t in,
                                                               const float* __restrict__ x, int64_t ldx, int T,
                                                               float* __restrict__ y, int64_t ldy) {
  const int lane = threadIdx.x & 31;
  const int64_t nch = in / 8;  // 16-byte chunks per row
  const int64_t groups = (out + kRowsPerWarp - 1) / kRowsPerWarp;
  const int64_t warp0 = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t wstride = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t g = warp0; g < groups; g += wstride) {
    const int64_t o0 = g * kRowsPerWarp;
    for (int t0 = 0; t0 < T; t0 += TT) {
      const int tn = min(TT, T - t0);
      float acc[kRowsPerWarp][TT];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int t = 0; t < TT; ++t) acc[r][t] = 0.f;
      for (int64_t c0 = lane; c0 < nch; c0 += 32 * kUnroll) {
        uint4 wv[kUnroll][kRowsPerWarp];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t c = c0 + 32 * u;
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) {
            const int64_t o = o0 + r;
            if (c < nch && o < out) wv[u][r] = __ldcs(w + o * nch + c);  // streamed: read once
            else wv[u][r] = make_uint4(0, 0, 0, 0);
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t c = c0 + 32 * u;
          if (c >= nch) break;
#pragma unroll
          for (int t = 0; t < TT; ++t) {
            if (t >= tn) break;
            const float4* xp = reinterpret_cast<const float4*>(x + (t0 + t) * ldx + c * 8);
            const float4 xa = __ldg(xp), xb = __ldg(xp + 1);
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) {
              float a = acc[r][t];
              a = __fmaf_rn(bf16_lo(wv[u][r].x), xa.x, a);
              a = __fmaf_rn(bf16_hi(wv[u][r].x), xa.y, a);
              a = __fmaf_rn(bf16_lo(wv[u][r].y), xa.z, a);
              a = __fmaf_rn(bf16_hi(wv[u][r].y), xa.w, a);
              a = __fmaf_rn(bf16_lo(wv[u][r].z), xb.x, a);
              a = __fmaf_rn(bf16_hi(wv[u][r].z), xb.y, a);
              a = __fmaf_rn(bf16_lo(wv[u][r].w), xb.z, a);
              a = __fmaf_rn(bf16_hi(wv[u][r].w), xb.w, a);
              acc[r][t] = a;
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
        for (int t = 0; t < TT; ++t) {
          const float s = warp_sum(acc[r][t]);
          if (lane == 0 && t < tn && o0 + r < out) y[(t0 + t) * ldy + o0 + r] = s;
        }
      }
    }
  }
}

template <int TT>
void launch(const void* w, int64_t out, int64_t in, const float* x, int64_t ldx, int T, float* y, int64_t ldy,
            cudaStream_t s) {
  static int blocks_per_sm = 0, sms = 0;
  if (!sms) {
    int dev = 0;
    DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    DELTAFIN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, bf16_rows_kernel<TT>, kWarps * 32, 0));
    if (blocks_per_sm < 1) blocks_per_sm = 1;
  }
  const int64_t groups = (out + kRowsPerWarp - 1) / kRowsPerWarp;
  const int64_t need = (groups + kWarps - 1) / kWarps;
  const int64_t cap = static_cast<int64_t>(sms) * blocks_per_sm * 4;
  const int grid = static_cast<int>(need < cap ? need : cap);
  bf16_rows_kernel<TT><<<grid, kWarps * 32, 0, s>>>(static_cast<const uint4*>(w), out, in, x, ldx, T, y, ldy);
  DELTAFIN_CUDA_LAUNCHED("bf16_rows_kernel");
}

}  // namespace

void bf16_gemm(const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T, float* dev_y,
               int64_t ldy, Stream stream) {
  if (out <= 0 || in <= 0 || T < 0) throw CudaError("bf16_gemm: out and in must be positive and T non-negative");
  if (in % 8 != 0 || reinterpret_cast<uintptr_t>(dev_w) % 16 != 0)
    throw CudaError("bf16_gemm: the input width (" + std::to_string(in) +
                    ") must be a multiple of 8 and the weights 16-byte aligned");
  if (ldx % 4 != 0 || reinterpret_cast<uintptr_t>(dev_x) % 16 != 0)
    throw CudaError("bf16_gemm: x rows must be 16-byte aligned (ldx a multiple of 4)");
  if (T == 0) return;
  const cudaStream_t s = as_stream(stream);
  // The per-row arithmetic is the same in every instantiation; TT only sets how many rows share
  // one pass over the weights.
  if (T == 1) launch<1>(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, s);
  else if (T == 2) launch<2>(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, s);
  else if (T <= 4) launch<4>(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, s);
  else launch<8>(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, s);
}

}  // namespace deltafin::cuda
