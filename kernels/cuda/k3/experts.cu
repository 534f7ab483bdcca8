// The routed experts of a K3 MoE layer in fp64: MXFP4 rows decoded exactly, fp64 activations.
//
// A pass takes up to kChunkPairs (row, slot) pairs and runs four kernels:
//   stage:   z times 2^kMxStageExp, in the order the dot kernels read it (staged_pos);
//   up:      the pairs grouped by expert (up to kMaxGroup pairs a group), each group's gate and up rows
//            read once for all of its pairs, SiTU into scratch h, staged the same way;
//   down:    the same groups, each expert's down rows read once: d[pair][row] = down_row . h[pair];
//   combine: y[t][r] = sum over slots j in order of w[t][j] * d[t * k + j][r] (an fma chain).
// Every dot product is summed by one warp in an order fixed by the row's width (lane l takes the
// 16-column halves l, l + 32, ... of the row's 32-column blocks, each half in column order, then the
// warp's butterfly); how many pairs share a group, which warp takes a row and the grid never enter the
// arithmetic, so each row's output has the same bits in any pass (batch invariance). The pieces the lab's
// variants of these kernels share (kernels/cuda/lab/experts64_lab.cuh) are in experts64_tiles.cuh.
#include <algorithm>
#include <type_traits>

#include "cuda/k3/experts64_tiles.cuh"

namespace deltafin::cuda::k3 {
namespace {

using namespace experts64;

constexpr int kWarps = 4;  // 128-thread blocks, four resident per SM: 16 warps of up to 128 registers
constexpr int kThreads = kWarps * 32;
constexpr int kMaxGroup = 4;      // pairs of one expert that a block computes together
constexpr int kChunkPairs = 256;  // (row, slot) pairs per pass: grouping scans them all

// Rows a warp takes at once per matrix (gate and up, or down twice as many): the loads in flight and
// the registers fall with the pairs of a group, which each need their own sums.
__host__ __device__ constexpr int rows_at_once(int nt) { return nt == 1 ? 4 : nt == 2 ? 2 : 1; }

// The dot products of NM matrices' rows (RM consecutive rows each, a "row group") with NT staged
// activation rows, for the row groups g0, g0 + gstep, ... < rows / RM, by one warp. The next step's
// codes load while this one's are multiplied. emit(g, dots) gets every lane the group's totals,
// dots[m][q][t] = row g * RM + q of matrix m against activations t.
template <int NM, int RM, int NT, typename Emit>
__device__ __forceinline__ void dot_groups(const uint8_t* const (&packed)[NM], const uint8_t* const (&scale)[NM],
                                           int rows, int n, const double* const (&xs)[NT], int g0, int gstep,
                                           Emit&& emit) {
  const int lane = threadIdx.x & 31, nh = n / 16, steps = (nh + 31) / 32, groups = rows / RM;
  const int64_t row_bytes = n / 2, scale_bytes = n / 32;
  if (g0 >= groups) return;
  uint2 code[NM][RM], code_next[NM][RM];
  uint32_t sc[NM][RM], sc_next[NM][RM];
  auto load = [&](int g, int s, uint2(&c)[NM][RM], uint32_t(&e)[NM][RM]) {
    const int hb = s * 32 + lane;
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int q = 0; q < RM; ++q) {
        const int64_t r = int64_t(g) * RM + q;
        c[m][q] = hb < nh ? load_codes(reinterpret_cast<const uint2*>(packed[m] + r * row_bytes) + hb) : uint2{0, 0};
        e[m][q] = hb < nh ? __ldg(scale[m] + r * scale_bytes + hb / 2) : 0u;
      }
  };
  double acc[NM][RM][NT];
#pragma unroll
  for (int m = 0; m < NM; ++m)
#pragma unroll
    for (int q = 0; q < RM; ++q)
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[m][q][t] = 0.0;
  int g = g0, s = 0;
  load(g, s, code, sc);
  for (;;) {
    int g_next = g, s_next = s + 1;
    if (s_next == steps) s_next = 0, g_next += gstep;
    const bool more = g_next < groups;
    if (more) load(g_next, s_next, code_next, sc_next);
    const int hb = s * 32 + lane;
    if (hb < nh) {
      double part[NM][RM][NT];
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q)
#pragma unroll
          for (int t = 0; t < NT; ++t) part[m][q][t] = 0.0;
      // The same fma chains either way; the loop order only changes which values are live (one
      // pair's 16 activations, or every pair's activations two columns at a time).
      if constexpr (NT == 1) {
        double2 x[8];  // columns 2p and 2p + 1 of the half-block at x[p]
#pragma unroll
        for (int p = 0; p < 8; ++p) x[p] = __ldg(reinterpret_cast<const double2*>(xs[0]) + p * nh + hb);
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int q = 0; q < RM; ++q)
#pragma unroll
            for (int w = 0; w < 2; ++w) {
              const E2m1Planes pl = e2m1_planes(w ? code[m][q].y : code[m][q].x);
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                part[m][q][0] = __fma_rn(code_double(pl, 2 * i), x[4 * w + i].x, part[m][q][0]);
                part[m][q][0] = __fma_rn(code_double(pl, 2 * i + 1), x[4 * w + i].y, part[m][q][0]);
              }
            }
      } else {
#pragma unroll
        for (int p = 0; p < 8; ++p) {
          double2 x[NT];
#pragma unroll
          for (int t = 0; t < NT; ++t) x[t] = __ldg(reinterpret_cast<const double2*>(xs[t]) + p * nh + hb);
#pragma unroll
          for (int m = 0; m < NM; ++m)
#pragma unroll
            for (int q = 0; q < RM; ++q) {
              const E2m1Planes pl = e2m1_planes(p < 4 ? code[m][q].x : code[m][q].y);
              const double lo = code_double(pl, 2 * (p % 4)), hi = code_double(pl, 2 * (p % 4) + 1);
#pragma unroll
              for (int t = 0; t < NT; ++t) {
                part[m][q][t] = __fma_rn(lo, x[t].x, part[m][q][t]);
                part[m][q][t] = __fma_rn(hi, x[t].y, part[m][q][t]);
              }
            }
        }
      }
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q) {
          const double bs = block_scale(sc[m][q]);
#pragma unroll
          for (int t = 0; t < NT; ++t) acc[m][q][t] = __fma_rn(part[m][q][t], bs, acc[m][q][t]);
        }
    }
    if (s_next == 0) {  // row group g is complete
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q)
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            acc[m][q][t] = warp_sum(acc[m][q][t]);
          }
      emit(g, acc);
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q)
#pragma unroll
          for (int t = 0; t < NT; ++t) acc[m][q][t] = 0.0;
    }
    if (!more) break;
    g = g_next, s = s_next;
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int q = 0; q < RM; ++q) code[m][q] = code_next[m][q], sc[m][q] = sc_next[m][q];
  }
}

// z[t] * 2^kMxStageExp at staged_pos, for the P / k rows of the pass.
__global__ void __launch_bounds__(256)
    stage_kernel(const double* __restrict__ z, int rows, int Z, double* __restrict__ zs) {
  pdl_enter();
  stage_rows(z, rows, Z, zs);
}

template <int NT>
__device__ __forceinline__ void up_group(const MxExpert& e, const int (&member)[kMaxGroup], int k, int Z, int I,
                                         const double* zs, double* hs) {
  constexpr int R = rows_at_once(NT);
  const double* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = zs + int64_t(member[t] / k) * Z;
  const uint8_t* packed[2] = {static_cast<const uint8_t*>(e.gate_packed), static_cast<const uint8_t*>(e.up_packed)};
  const uint8_t* scale[2] = {static_cast<const uint8_t*>(e.gate_scale), static_cast<const uint8_t*>(e.up_scale)};
  const int lane = threadIdx.x & 31;
  dot_groups<2, R, NT>(packed, scale, I, Z, xs, blockIdx.x * kWarps + (threadIdx.x >> 5), gridDim.x * kWarps,
                       [&](int g, const double(&d)[2][R][NT]) {
                         // Lane q + R * t takes row g * R + q of pair t.
                         double gv = 0.0, uv = 0.0;
#pragma unroll
                         for (int t = 0; t < NT; ++t)
#pragma unroll
                           for (int q = 0; q < R; ++q)
                             if (lane == q + R * t) gv = d[0][q][t], uv = d[1][q][t];
                         if (lane < R * NT) {
                           const double h = situ_glu(gv, uv);
                           const int64_t i = int64_t(g) * R + lane % R;
                           hs[int64_t(member[lane / R]) * I + staged_pos(i, I)] = h * pow2(kMxStageExp);
                         }
                       });
}

// f(std::integral_constant<int, n>{}) for a group of n = 1..kMaxGroup pairs: the group kernels'
// compile-time pair counts.
template <typename F>
__device__ __forceinline__ void by_group_size(int n, F&& f) {
  static_assert(kMaxGroup == 4, "one case per group size");
  switch (n) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      f(std::integral_constant<int, 4>{});
      break;
  }
}

// Per pair group (blockIdx.y its leading pair) and kWarps warps (blockIdx.x): the expert's gate and up
// rows against the group's z rows, SiTU, staged: hs[pair].
__global__ void __launch_bounds__(kThreads, 4)
    expert_up_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot, int P, int k, int Z, int I,
                     const double* __restrict__ zs, double* __restrict__ hs) {
  pdl_enter();
  int member[kMaxGroup];
  const int n = group_of(slot, P, blockIdx.y, member);
  if (n == 0) return;
  const MxExpert e = table[slot[blockIdx.y]];
  by_group_size(n, [&](auto nt) { up_group<decltype(nt)::value>(e, member, k, Z, I, zs, hs); });
}

template <int NT>
__device__ __forceinline__ void down_group(const MxExpert& e, const int (&member)[kMaxGroup], int Z, int I,
                                           const double* hs, double* d) {
  constexpr int R = 2 * rows_at_once(NT);
  const double* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = hs + int64_t(member[t]) * I;
  const uint8_t* packed[1] = {static_cast<const uint8_t*>(e.down_packed)};
  const uint8_t* scale[1] = {static_cast<const uint8_t*>(e.down_scale)};
  const int lane = threadIdx.x & 31;
  dot_groups<1, R, NT>(packed, scale, Z, I, xs, blockIdx.x * kWarps + (threadIdx.x >> 5), gridDim.x * kWarps,
                       [&](int g, const double(&v)[1][R][NT]) {
                         double dv = 0.0;
#pragma unroll
                         for (int t = 0; t < NT; ++t)
#pragma unroll
                           for (int q = 0; q < R; ++q)
                             if (lane == q + R * t) dv = v[0][q][t];
                         if (lane < R * NT) d[int64_t(member[lane / R]) * Z + int64_t(g) * R + lane % R] = dv;
                       });
}

// Per pair group and kWarps warps: the expert's down rows against the group's hs: d[pair][row].
__global__ void __launch_bounds__(kThreads, 4)
    expert_down_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot, int P, int Z, int I,
                       const double* __restrict__ hs, double* __restrict__ d) {
  pdl_enter();
  int member[kMaxGroup];
  const int n = group_of(slot, P, blockIdx.y, member);
  if (n == 0) return;
  const MxExpert e = table[slot[blockIdx.y]];
  by_group_size(n, [&](auto nt) { down_group<decltype(nt)::value>(e, member, Z, I, hs, d); });
}

// y[t][r] = sum over slots j in order of wt[t * k + j] * d[t * k + j][r].
__global__ void __launch_bounds__(256) combine_kernel(const double* __restrict__ d, const double* __restrict__ wt,
                                                      int rows, int k, int Z, double* __restrict__ y) {
  pdl_enter();
  combine_rows(d, wt, rows, k, Z, y);
}

// Rows of a pass: as many as keep its pairs within kChunkPairs.
int chunk_rows(int T, int k) { return std::max(1, std::min(T, kChunkPairs / k)); }

// Blocks per pair group: four blocks an SM deep when there are few pairs.
unsigned blocks_per_group(int groups, int pairs) { return experts64::blocks_per_group(kWarps, 4, groups, pairs); }

}  // namespace

int64_t routed_experts_scratch(int T, int k, int latent, int inter) {
  const int64_t rows = chunk_rows(std::max(1, T), std::max(1, k));
  return rows * latent + rows * k * (int64_t(inter) + latent);
}

void routed_experts(const MxExpert* table, const int32_t* slot, const double* w, int T, int k, int latent, int inter,
                    const double* z, double* scratch, double* y, Stream s) {
  if (T <= 0) return;
  if (latent % 32 != 0 || inter % 32 != 0 || k < 1)
    throw CudaError("routed_experts: latent and inter must be multiples of 32, top_k at least 1");
  const cudaStream_t st = as_stream(s);
  const int rows = chunk_rows(T, k);
  double* zs = scratch;
  double* hs = zs + int64_t(rows) * latent;
  double* d = hs + int64_t(rows) * k * inter;
  for (int t0 = 0; t0 < T; t0 += rows) {
    const int n = std::min(rows, T - t0), P = n * k;
    const int32_t* sl = slot + int64_t(t0) * k;
    DELTAFIN_CUDA_CHECK(
        launch(stage_kernel, dim3(grid_1d(int64_t(n) * latent)), 256, 0, st, z + int64_t(t0) * latent, n, latent, zs));
    const dim3 up_grid(blocks_per_group(inter / rows_at_once(1), P), unsigned(P));
    DELTAFIN_CUDA_CHECK(launch(expert_up_kernel, up_grid, kThreads, 0, st, table, sl, P, k, latent, inter,
                               static_cast<const double*>(zs), hs));
    const dim3 down_grid(blocks_per_group(latent / (2 * rows_at_once(1)), P), unsigned(P));
    DELTAFIN_CUDA_CHECK(launch(expert_down_kernel, down_grid, kThreads, 0, st, table, sl, P, latent, inter,
                               static_cast<const double*>(hs), d));
    DELTAFIN_CUDA_CHECK(launch(combine_kernel, dim3(grid_1d(int64_t(n) * latent)), 256, 0, st,
                               static_cast<const double*>(d), w + int64_t(t0) * k, n, k, latent,
                               y + int64_t(t0) * latent));
  }
}

}  // namespace deltafin::cuda::k3
