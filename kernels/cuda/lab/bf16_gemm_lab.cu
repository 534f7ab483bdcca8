// The BF16 GEMM versions the product never chooses: v2, v3 and v5, bf16_gemm.cu's v10, v11 and v12
// without the L2 prefetch hint on the weight loads (plain __ldcs, evict-first), and v1. Kept to
// measure against (deltafin-cuda-bench) and to check (deltafin-cuda-check); the arithmetic, and so
// the bits, of v2, v3, v5 are v10-v12's (bf16_gemm.cu says how and why). Numbers of dropped versions
// are not reused: v4 (16 rows x 16 warps per block, below v3 at every shape) and v6..v9 (weights
// through a cp.async shared-memory ring, below the best of v2/v3/v5 at every shape;
// docs/history/PERFORMANCE-LOG.md).
//
// v1 (FFMA; the default only below sm_80, which the product is not built for): a warp owns 4 whole
// output rows, lane l always sums the 16-byte chunks l, l+32, ... of a weight row in that order, and
// the 32 lane sums meet in one fixed butterfly. Memory-bound at T=1, but every weight value is
// converted and FMA'd once per row of x, so at T=8 it is bound by the FFMA pipe (22-29% of the copy
// bandwidth on the H200).
#include <cooperative_groups.h>

#include <iterator>

#include "cuda/cuda_common.cuh"
#include "cuda/lab/bf16_gemm_lab.h"

namespace deltafin::cuda {
namespace {

// ---- v1: FFMA ----------------------------------------------------------------------------------

constexpr int kWarps = 8;        // warps per block
constexpr int kRowsPerWarp = 4;  // weight rows one warp reduces together (sharing each x load)
constexpr int kUnroll = 4;       // chunks per lane in flight before the first use

template <int TT>
__global__ void __launch_bounds__(kWarps * 32)
    bf16_rows_kernel(const uint4* __restrict__ w, int64_t out, int64_t in, const float* __restrict__ x, int64_t ldx,
                     int T, float* __restrict__ y, int64_t ldy) {
  pdl_enter();
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
void launch_v1(const void* w, int64_t out, int64_t in, const float* x, int64_t ldx, int T, float* y, int64_t ldy,
               cudaStream_t s) {
  static int blocks_per_sm = 0, sms = 0;
  if (!sms) {
    int dev = 0;
    DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    DELTAFIN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, bf16_rows_kernel<TT>, kWarps * 32, 0));
    if (blocks_per_sm < 1) blocks_per_sm = 1;
  }
  const int64_t groups = (out + kRowsPerWarp - 1) / kRowsPerWarp;
  const int64_t need = (groups + kWarps - 1) / kWarps;
  const int64_t cap = static_cast<int64_t>(sms) * blocks_per_sm * 4;
  const int grid = static_cast<int>(need < cap ? need : cap);
  DELTAFIN_CUDA_CHECK(
      launch(bf16_rows_kernel<TT>, grid, kWarps * 32, 0, s, static_cast<const uint4*>(w), out, in, x, ldx, T, y, ldy));
}

void run_v1(const void* w, int64_t out, int64_t in, const float* x, int64_t ldx, int T, float* y, int64_t ldy,
            Stream st) {
  const cudaStream_t s = as_stream(st);
  // The per-row arithmetic is the same in every instantiation; TT only sets how many rows share
  // one pass over the weights.
  if (T == 1) launch_v1<1>(w, out, in, x, ldx, T, y, ldy, s);
  else if (T == 2) launch_v1<2>(w, out, in, x, ldx, T, y, ldy, s);
  else if (T <= 4) launch_v1<4>(w, out, in, x, ldx, T, y, ldy, s);
  else launch_v1<8>(w, out, in, x, ldx, T, y, ldy, s);
}

// Eight fp32 values -> three bf16 parts each, packed as mma B registers f[part][j] = (v[2j], v[2j+1])
// (low half = lower k). Each part is the bf16 truncation of what the previous parts left:
// p1 = trunc(x) keeps the top 8 significant bits, r1 = x - p1 is exact in fp32 (the low 16 bits of
// the significand), p2 = trunc(r1) takes its top 8 bits, and r2 = r1 - p2 (exact) has at most 8
// significant bits, so p3 = r2 exactly and p1 + p2 + p3 == x. Truncation instead of rounding to
// nearest: equally exact, one byte permute per pair instead of a convert, and no overflow to
// infinity for |x| near FLT_MAX. An infinite x keeps its infinity in p1 with zero remainders (so the
// product sums to +-inf as in the reference, not NaN). Limit: for |x| below about 2^-110 the
// remainders are fp32 subnormals and p3 may lose bits (relative 2^-16 of an already tiny value).
__device__ __forceinline__ void split8(const float4 a, const float4 b, uint32_t (&f)[3][4]) {
  float r[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int p = 0; p < 3; ++p) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t lo = __float_as_uint(r[2 * j]), hi = __float_as_uint(r[2 * j + 1]);
      f[p][j] = __byte_perm(lo, hi, 0x7632);
      if (p < 2) {
        const float tlo = __uint_as_float(lo & 0xffff0000u), thi = __uint_as_float(hi & 0xffff0000u);
        if (p == 0) {
          r[2 * j] = r[2 * j] == tlo ? 0.f : r[2 * j] - tlo;
          r[2 * j + 1] = r[2 * j + 1] == thi ? 0.f : r[2 * j + 1] - thi;
        } else {
          r[2 * j] -= tlo;
          r[2 * j + 1] -= thi;
        }
      }
    }
  }
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never chosen below sm_80 (bf16_gemm_default_version checks the device)
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// A block (or a cluster of CL blocks) owns MT m16 tiles of weight rows over the whole width; its
// W * CL warps take k32-steps in groups of U: warp v (= rank * W + warp) the groups v, v + W*CL, ...
template <int MT, int W, int U, int CL>
__global__ void __launch_bounds__(W * 32, (W <= 8 ? 2 : 1))
    bf16_mma_kernel(const uint4* __restrict__ w, int64_t out, int64_t in, const float* __restrict__ x, int64_t ldx,
                    int T, float* __restrict__ y, int64_t ldy) {
  __shared__ float red[W][MT * 16][8];
  __shared__ float part[CL > 1 ? MT * 16 * 8 : 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, tig = lane & 3;
  const int64_t nch = in / 8;
  const int64_t steps = (nch + 3) / 4;
  const int64_t tile = blockIdx.x / CL;
  const int rank = static_cast<int>(blockIdx.x % CL);  // == the block's rank in its 1-D cluster
  const int64_t r0 = tile * (MT * 16);
  const int64_t v = static_cast<int64_t>(rank) * W + warp;
  const uint4* wr[MT][2];
  bool rok[MT][2];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = r0 + m * 16 + h * 8 + g;
      rok[m][h] = row < out;
      wr[m][h] = w + (rok[m][h] ? row : 0) * nch;
    }
  // Prologue, before waiting for the kernel ahead (pdl.cuh): the weights never change during a
  // pass, so the chunks this lane loads in its first kPrefetchSteps k-step groups are asked into L2
  // while that kernel finishes. Loads only: every value and sum is the same.
  constexpr int kPrefetchSteps = 4;
#pragma unroll
  for (int i = 0; i < kPrefetchSteps; ++i)
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t q = (v * U + static_cast<int64_t>(i) * W * CL * U + u) * 4 + tig;
      if (q < nch)
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (rok[m][h]) prefetch_l2(wr[m][h] + q);
    }
  pdl_enter();
  for (int t0 = 0; t0 < T; t0 += 8) {
    const int tn = min(8, T - t0);
    const bool xok = g < tn;
    const float* xr = x + (t0 + (xok ? g : 0)) * ldx;
    float acc[MT][3][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int p = 0; p < 3; ++p)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][p][i] = 0.f;
    for (int64_t s0 = v * U; s0 < steps; s0 += static_cast<int64_t>(W) * CL * U) {
      uint4 wa[U][MT][2];
      float4 xa[U][2];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t q = (s0 + u) * 4 + tig;
        const bool ok = q < nch;
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) wa[u][m][h] = ok && rok[m][h] ? __ldcs(wr[m][h] + q) : make_uint4(0, 0, 0, 0);
        const float4* xp = reinterpret_cast<const float4*>(xr + q * 8);
        xa[u][0] = ok && xok ? __ldg(xp) : make_float4(0.f, 0.f, 0.f, 0.f);
        xa[u][1] = ok && xok ? __ldg(xp + 1) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        uint32_t f[3][4];
        split8(xa[u][0], xa[u][1], f);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const uint4 a = wa[u][m][0], b = wa[u][m][1];
#pragma unroll
          for (int p = 0; p < 3; ++p) {
            mma_bf16(acc[m][p], a.x, b.x, a.y, b.y, f[p][0], f[p][1]);
            mma_bf16(acc[m][p], a.z, b.z, a.w, b.w, f[p][2], f[p][3]);
          }
        }
      }
    }
    // acc[m][p] = {D[g][2tig], D[g][2tig+1], D[g+8][2tig], D[g+8][2tig+1]} of part p.
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        red[warp][m * 16 + g + (i >> 1) * 8][2 * tig + (i & 1)] = (acc[m][0][i] + acc[m][1][i]) + acc[m][2][i];
    __syncthreads();
    for (int i = threadIdx.x; i < MT * 16 * 8; i += W * 32) {
      const int row = i >> 3, t = i & 7;
      float s = red[0][row][t];
#pragma unroll
      for (int k = 1; k < W; ++k) s += red[k][row][t];
      if constexpr (CL == 1) {
        if (t < tn && r0 + row < out) y[(t0 + t) * ldy + r0 + row] = s;
      } else {
        part[i] = s;
      }
    }
    if constexpr (CL > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      namespace cg = cooperative_groups;
      cg::cluster_group cluster = cg::this_cluster();
      cluster.sync();  // every block's partial sums are in its shared memory
      if (rank == 0) {
        for (int i = threadIdx.x; i < MT * 16 * 8; i += W * 32) {
          const int row = i >> 3, t = i & 7;
          float s = part[i];
#pragma unroll
          for (int k = 1; k < CL; ++k) s += cluster.map_shared_rank(part, k)[i];
          if (t < tn && r0 + row < out) y[(t0 + t) * ldy + r0 + row] = s;
        }
      }
      cluster.sync();  // the other blocks keep their shared memory until rank 0 has read it
#else
      __trap();  // never chosen below sm_90 (bf16_gemm_default_version checks the device)
#endif
    }
    __syncthreads();
  }
}

template <int MT, int W, int U, int CL>
void launch_mma(const void* w, int64_t out, int64_t in, const float* x, int64_t ldx, int T, float* y, int64_t ldy,
                Stream st) {
  const cudaStream_t s = as_stream(st);
  const int64_t tiles = (out + MT * 16 - 1) / (MT * 16);
  const auto* wv = static_cast<const uint4*>(w);
  if constexpr (CL == 1) {
    DELTAFIN_CUDA_CHECK(launch(bf16_mma_kernel<MT, W, U, 1>, static_cast<unsigned>(tiles), W * 32, 0, s, wv, out, in, x,
                               ldx, T, y, ldy));
  } else {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(tiles * CL));
    cfg.blockDim = dim3(W * 32);
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CL;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1 + static_cast<unsigned>(pdl_attributes(attr + 1));
    DELTAFIN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, bf16_mma_kernel<MT, W, U, CL>, wv, out, in, x, ldx, T, y, ldy));
  }
  DELTAFIN_CUDA_LAUNCHED("bf16_mma_kernel");
}

const Bf16GemmVersion kLab[] = {
    {1, "FFMA, warp per 4 rows", 0, run_v1},
    {2, "mma, 32 rows x 8 warps per block", 8, launch_mma<2, 8, 2, 1>},
    {3, "mma, 16 rows x 8 warps per block", 8, launch_mma<1, 8, 4, 1>},
    {5, "mma, 16 rows x 4 blocks x 8 warps per cluster", 9, launch_mma<1, 8, 2, 4>},
};

}  // namespace

void register_lab_bf16_gemm_versions() { add_bf16_gemm_versions(kLab, static_cast<int>(std::size(kLab))); }

}  // namespace deltafin::cuda
