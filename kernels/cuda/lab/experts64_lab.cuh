#pragma once
// The lab's fp64 routed-expert kernel templates and their variant table (included by experts64_lab*.cu
// only). The math is k3/experts.cu's (read its comment): pairs grouped by expert on the device, a warp
// takes R rows of each matrix at once, lane l the 16-column half-blocks l, l + 32, ... of each row, each
// half-block's 16 codes summed into `part` in column order by one fma chain per (row, pair), the
// half-block's E8M0 scale folded in by one fma into the lane's running sum, then the warp's butterfly.
//
// Order of each output: with hb == 1 exactly that, whatever the other parameters (they move loads, the
// decoding of the same doubles, which warp or block takes a row, how many pairs share a read), so those
// variants give the product's bits. With hb == 2 lane l takes the half-blocks 2l, 2l + 1, 2l + 64, ...
// (whole 32-column blocks, one 16-byte code load per row): the same chains per half-block, added to other
// lanes' sums. No order depends on T, on the grouping or on the grid: every variant is batch invariant.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/cuda_common.cuh"
#include "cuda/k3/experts64_tiles.cuh"
#include "cuda/lab/experts64_lab.h"

namespace deltafin::cuda::lab::experts64 {

namespace tiles = k3::experts64;

// The sweep's variants: the product's shape first, then one or two parameters changed at a time, then
// combinations; hb == 2 (another order) last.
//   ru rd ahead warps minb sc xm dec group fill pass pf hb
inline constexpr Experts64Params kVariants[] = {
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 4, 256, 0, 1},  // the product's shape
    // rows a warp takes at once (loads in flight per warp, registers, how evenly the row groups spread)
    {2, 4, 1, 4, 4, 0, 0, 0, 4, 4, 256, 0, 1},
    {4, 4, 1, 4, 4, 0, 0, 0, 4, 4, 256, 0, 1},
    {8, 8, 1, 4, 2, 0, 0, 0, 4, 4, 256, 0, 1},
    {2, 8, 1, 4, 4, 0, 0, 0, 4, 4, 256, 0, 1},
    // two steps of codes in flight
    {4, 8, 2, 4, 3, 0, 0, 0, 4, 4, 256, 0, 1},
    {2, 4, 2, 4, 3, 0, 0, 0, 4, 4, 256, 0, 1},
    // block shape and blocks per SM
    {4, 8, 1, 8, 2, 0, 0, 0, 4, 4, 256, 0, 1},
    {4, 8, 1, 4, 3, 0, 0, 0, 4, 4, 256, 0, 1},
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 8, 256, 0, 1},
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 2, 256, 0, 1},
    // scales as 32-bit words
    {4, 8, 1, 4, 4, 1, 0, 0, 4, 4, 256, 0, 1},
    // activations in shared memory
    {4, 8, 1, 4, 4, 0, 1, 0, 4, 4, 256, 0, 1},
    {4, 8, 1, 4, 3, 0, 2, 0, 4, 4, 256, 0, 1},
    // decoding
    {4, 8, 1, 4, 4, 0, 0, 1, 4, 4, 256, 0, 1},
    {4, 8, 1, 4, 4, 0, 0, 2, 4, 4, 256, 0, 1},
    // pairs per group and per pass
    {4, 8, 1, 4, 4, 0, 0, 0, 1, 4, 256, 0, 1},
    {4, 8, 1, 4, 4, 0, 0, 0, 2, 4, 256, 0, 1},
    {4, 8, 1, 4, 3, 0, 0, 0, 8, 4, 256, 0, 1},
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 4, 128, 0, 1},
    // codes and scales of the next row groups asked of L2
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 4, 256, 1, 1},
    {4, 8, 1, 4, 4, 0, 0, 0, 4, 4, 256, 2, 1},
    {2, 4, 1, 4, 4, 0, 0, 0, 4, 4, 256, 1, 1},
    // combinations
    {4, 8, 1, 4, 4, 1, 0, 0, 4, 4, 256, 1, 1},
    {4, 4, 1, 4, 4, 1, 0, 0, 4, 4, 256, 1, 1},
    {4, 8, 1, 4, 4, 1, 1, 0, 4, 4, 256, 1, 1},
    {4, 8, 2, 4, 3, 1, 0, 0, 4, 4, 256, 1, 1},
    // whole 32-column blocks per lane (another summation order)
    {4, 8, 1, 4, 2, 0, 0, 0, 4, 4, 256, 0, 2},
    {4, 8, 1, 4, 2, 1, 0, 0, 4, 4, 256, 0, 2},
    {4, 8, 1, 4, 2, 0, 0, 0, 4, 4, 256, 1, 2},
    {2, 4, 1, 4, 3, 1, 0, 0, 4, 4, 256, 1, 2},
};
inline constexpr int kCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
inline constexpr int kParts = 4;  // experts64_lab_part<N>.cu, compiled in parallel

// One pass's up and down launches (the stage and combine kernels are the lab's own, experts64_lab.cu).
struct Args {
  const MxExpert* table;
  const int32_t* slot;
  int P, k, Z, I;
  const double* zs;
  double* hs;
  double* d;
  dim3 up_grid, down_grid;
};
using Launcher = void (*)(const Args&, cudaStream_t);
// Part P's launcher of variant v (experts64_lab_part<P>.cu), nullptr when v is not that part's.
Launcher part0_launcher(int v);
Launcher part1_launcher(int v);
Launcher part2_launcher(int v);
Launcher part3_launcher(int v);

// Variant VI's parameters as static constants (usable in lambdas without a capture).
template <int VI>
struct Var {
  static constexpr Experts64Params p = kVariants[VI];
  static constexpr int ru = p.ru, rd = p.rd, ahead = p.ahead, warps = p.warps, minb = p.minb, sc = p.sc, xm = p.xm,
                       dec = p.dec, group = p.group, pf = p.pf, hb = p.hb;
};

// Rows a warp takes at once per matrix for a group of nt pairs, from r1 at one pair: the product's
// rows_at_once for r1 = 4 (4, 2, 1, 1), halving again from five pairs.
__host__ __device__ constexpr int rows_for(int r1, int nt) {
  const int div = nt == 1 ? 1 : nt == 2 ? 2 : nt <= 4 ? 4 : 8;
  return r1 / div > 0 ? r1 / div : 1;
}

// f(std::integral_constant<int, n>{}) for a group of n = 1..G pairs.
template <int G, int N = 1, typename F>
__device__ __forceinline__ void by_group_size(int n, F&& f) {
  if constexpr (N >= G) {
    f(std::integral_constant<int, G>{});
  } else {
    if (n == N) f(std::integral_constant<int, N>{});
    else by_group_size<G, N + 1>(n, f);
  }
}

// A lane's codes of one row for one step: 8 bytes (one half-block) or 16 (two).
template <int HB>
struct Codes;
template <>
struct Codes<1> {
  uint2 v;
  __device__ __forceinline__ void load(const uint8_t* p) { v = tiles::load_codes(reinterpret_cast<const uint2*>(p)); }
  __device__ __forceinline__ uint32_t word(int w) const { return w == 0 ? v.x : v.y; }
};
template <>
struct Codes<2> {
  uint4 v;
  __device__ __forceinline__ void load(const uint8_t* p) {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  }
  __device__ __forceinline__ uint32_t word(int w) const { return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w; }
};

// The doubles of the 8 codes of one 32-bit word: every way gives the same values (mxfp4_fp64.h).
template <int DEC>
struct Decoded {
  uint32_t w;
  k3::E2m1Planes pl{};
  __device__ __forceinline__ explicit Decoded(uint32_t word) : w(word) {
    if constexpr (DEC == 0) pl = k3::e2m1_planes(word);
  }
  __device__ __forceinline__ double at(int n, const uint32_t* lut) const {
    if constexpr (DEC == 0) return tiles::code_double(pl, n);
    else if constexpr (DEC == 1) return __hiloint2double(static_cast<int>(lut[(w >> (4 * n)) & 15u]), 0);
    else return __hiloint2double(static_cast<int>(k3::e2m1_high_word(w, n)), 0);
  }
};

// Asks L2 for `bytes` at p (a hint: nothing waits for it). One bulk prefetch by lane 0 where p and
// bytes allow it, else a line per lane.
__device__ __forceinline__ void l2_prefetch(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (((reinterpret_cast<uintptr_t>(p) | bytes) & 15u) == 0) {
    if ((threadIdx.x & 31) == 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes));
    return;
  }
#endif
  for (uint32_t o = (threadIdx.x & 31) * 128u; o < bytes; o += 32u * 128u)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const char*>(p) + o));
}

// The dot products of NM matrices' rows (RM consecutive rows each, a row group) with NT staged activation
// rows (in shared memory when XS), for the row groups g0, g0 + gstep, ... < rows / RM, by one warp, with
// variant VI's loads; emit(g, dots) as in the product's dot_groups.
template <int VI, int NM, int RM, int NT, bool XS, typename Emit>
__device__ __forceinline__ void dot_groups(const uint8_t* const (&packed)[NM], const uint8_t* const (&scale)[NM],
                                           int rows, int n, const double* const (&xs)[NT], int g0, int gstep,
                                           const uint32_t* lut, Emit&& emit) {
  using V = Var<VI>;
  constexpr int HB = V::hb, A = V::ahead, NR = NM * RM;
  constexpr int WR = 4 * HB, RPL = 32 / WR;              // scale words per row and step; rows per word load
  constexpr int SW = V::sc ? (NR + RPL - 1) / RPL : NR;  // scale registers per stage
  const int lane = threadIdx.x & 31, nh = n / 16, steps = (nh + 32 * HB - 1) / (32 * HB), groups = rows / RM;
  const int64_t row_bytes = n / 2, scale_bytes = n / 32;
  if (g0 >= groups) return;
  struct Stage {
    Codes<HB> c[NM][RM];
    uint32_t e[SW];
  };
  Stage ring[A + 1];
  auto prefetch = [&](int g) {
    if (g >= groups) return;
#pragma unroll
    for (int m = 0; m < NM; ++m) {
      l2_prefetch(packed[m] + int64_t(g) * RM * row_bytes, uint32_t(RM * row_bytes));
      l2_prefetch(scale[m] + int64_t(g) * RM * scale_bytes, uint32_t(RM * scale_bytes));
    }
  };
  auto load = [&](int g, int s, Stage& st) {
    if constexpr (V::pf > 0) {
      if (s == 0) prefetch(g + V::pf * gstep);
    }
    const int hb0 = (s * 32 + lane) * HB;
    const bool live = hb0 < nh;
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int q = 0; q < RM; ++q) {
        const int64_t r = int64_t(g) * RM + q;
        if (live) st.c[m][q].load(packed[m] + r * row_bytes + int64_t(hb0) * 8);
        else st.c[m][q] = Codes<HB>{};
        if constexpr (!V::sc) st.e[m * RM + q] = live ? __ldg(scale[m] + r * scale_bytes + hb0 / 2) : 0u;
      }
    if constexpr (V::sc) {
      // Lane L loads word L % WR of the step's scale bytes of row L / WR + RPL i (of the NR rows, matrix-major).
#pragma unroll
      for (int i = 0; i < SW; ++i) {
        const int idx = lane / WR + RPL * i, w = lane % WR, q = idx % RM;
        const uint8_t* base = scale[0];
#pragma unroll
        for (int m = 1; m < NM; ++m)
          if (idx / RM == m) base = scale[m];
        const int64_t at = (int64_t(g) * RM + q) * scale_bytes + int64_t(s) * 16 * HB + 4 * w;
        st.e[i] = idx < NR && int64_t(s) * 16 * HB + 4 * w < scale_bytes
                      ? __ldg(reinterpret_cast<const uint32_t*>(base + at))
                      : 0u;
      }
    }
  };
  // The E8M0 byte of row (m, q) for this lane's block in stage st (every lane takes part: shuffles).
  auto scale_of = [&](const Stage& st, int m, int q) -> uint32_t {
    if constexpr (!V::sc) {
      return st.e[m * RM + q];
    } else {
      const int idx = m * RM + q, byte = lane * HB / 2;
      const uint32_t v = __shfl_sync(0xffffffffu, st.e[idx / RPL], (idx % RPL) * WR + (byte >> 2));
      return (v >> (8 * (byte & 3))) & 255u;
    }
  };
  auto xload = [&](int t, int p, int hb) -> double2 {
    const double2* b = reinterpret_cast<const double2*>(xs[t]) + int64_t(p) * nh + hb;
    if constexpr (XS) return *b;
    else return __ldg(b);
  };

  double acc[NM][RM][NT];
#pragma unroll
  for (int m = 0; m < NM; ++m)
#pragma unroll
    for (int q = 0; q < RM; ++q)
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[m][q][t] = 0.0;
  if constexpr (V::pf > 1) {
#pragma unroll
    for (int j = 1; j < V::pf; ++j) prefetch(g0 + j * gstep);
  }
  int gl = g0, sl = 0;  // the next step to load
  auto advance = [&](int& g, int& s) {
    if (++s == steps) s = 0, g += gstep;
  };
#pragma unroll
  for (int a = 0; a < A; ++a) {
    if (gl < groups) load(gl, sl, ring[a]);
    advance(gl, sl);
  }
  int g = g0, s = 0;  // the step to compute
  for (;;) {
    if (gl < groups) load(gl, sl, ring[A]);
    advance(gl, sl);
    const Stage& st = ring[0];
    double bs[NM][RM];
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int q = 0; q < RM; ++q) bs[m][q] = tiles::block_scale(scale_of(st, m, q));
    const int hb0 = (s * 32 + lane) * HB;
    if (hb0 < nh) {
#pragma unroll
      for (int j = 0; j < HB; ++j) {
        const int hb = hb0 + j;
        double part[NM][RM][NT];
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int q = 0; q < RM; ++q)
#pragma unroll
            for (int t = 0; t < NT; ++t) part[m][q][t] = 0.0;
        // The product's fma chains, in its two loop orders (one pair's 16 activations live, or every
        // pair's two at a time).
        if constexpr (NT == 1) {
          double2 x[8];
#pragma unroll
          for (int p = 0; p < 8; ++p) x[p] = xload(0, p, hb);
#pragma unroll
          for (int m = 0; m < NM; ++m)
#pragma unroll
            for (int q = 0; q < RM; ++q)
#pragma unroll
              for (int w = 0; w < 2; ++w) {
                const Decoded<V::dec> dc(st.c[m][q].word(2 * j + w));
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                  part[m][q][0] = __fma_rn(dc.at(2 * i, lut), x[4 * w + i].x, part[m][q][0]);
                  part[m][q][0] = __fma_rn(dc.at(2 * i + 1, lut), x[4 * w + i].y, part[m][q][0]);
                }
              }
        } else {
#pragma unroll
          for (int p = 0; p < 8; ++p) {
            double2 x[NT];
#pragma unroll
            for (int t = 0; t < NT; ++t) x[t] = xload(t, p, hb);
#pragma unroll
            for (int m = 0; m < NM; ++m)
#pragma unroll
              for (int q = 0; q < RM; ++q) {
                const Decoded<V::dec> dc(st.c[m][q].word(2 * j + p / 4));
                const double lo = dc.at(2 * (p % 4), lut), hi = dc.at(2 * (p % 4) + 1, lut);
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
          for (int q = 0; q < RM; ++q)
#pragma unroll
            for (int t = 0; t < NT; ++t) acc[m][q][t] = __fma_rn(part[m][q][t], bs[m][q], acc[m][q][t]);
      }
    }
    if (s == steps - 1) {  // row group g is complete
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q)
#pragma unroll
          for (int t = 0; t < NT; ++t) acc[m][q][t] = warp_sum(acc[m][q][t]);
      emit(g, acc);
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int q = 0; q < RM; ++q)
#pragma unroll
          for (int t = 0; t < NT; ++t) acc[m][q][t] = 0.0;
    }
    advance(g, s);
    if (g >= groups) break;
#pragma unroll
    for (int a = 0; a < A; ++a) ring[a] = ring[a + 1];
  }
}

// The group's activation rows: copied into shared memory (variants with xm >= NT) or left where they are.
template <int VI, int NT, typename Body>
__device__ __forceinline__ void with_rows(const double* (&xs)[NT], int n, double* smem, Body&& body) {
  if constexpr (kVariants[VI].xm >= NT) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      double2* dst = reinterpret_cast<double2*>(smem + int64_t(t) * n);
      const double2* src = reinterpret_cast<const double2*>(xs[t]);
      for (int i = threadIdx.x; i < n / 2; i += blockDim.x) dst[i] = __ldg(src + i);
      xs[t] = smem + int64_t(t) * n;
    }
    __syncthreads();
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

template <int VI, int NT>
__device__ __forceinline__ void up_group(const MxExpert& e, const int (&member)[kVariants[VI].group], int k, int Z,
                                         int I, const double* zs, double* hs, double* smem, const uint32_t* lut) {
  using V = Var<VI>;
  constexpr int R = rows_for(V::ru, NT);
  const double* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = zs + int64_t(member[t] / k) * Z;
  const uint8_t* packed[2] = {static_cast<const uint8_t*>(e.gate_packed), static_cast<const uint8_t*>(e.up_packed)};
  const uint8_t* scale[2] = {static_cast<const uint8_t*>(e.gate_scale), static_cast<const uint8_t*>(e.up_scale)};
  const int lane = threadIdx.x & 31;
  with_rows<VI, NT>(xs, Z, smem, [&](auto xs_in_smem) {
    dot_groups<VI, 2, R, NT, decltype(xs_in_smem)::value>(
        packed, scale, I, Z, xs, blockIdx.x * V::warps + (threadIdx.x >> 5), gridDim.x * V::warps, lut,
        [&](int g, const double(&d)[2][R][NT]) {
          // Lane q + R * t takes row g * R + q of pair t.
          double gv = 0.0, uv = 0.0;
#pragma unroll
          for (int t = 0; t < NT; ++t)
#pragma unroll
            for (int q = 0; q < R; ++q)
              if (lane == q + R * t) gv = d[0][q][t], uv = d[1][q][t];
          if (lane < R * NT) {
            const double h = tiles::situ_glu(gv, uv);
            const int64_t i = int64_t(g) * R + lane % R;
            hs[int64_t(member[lane / R]) * I + tiles::staged_pos(i, I)] = h * tiles::pow2(k3::kMxStageExp);
          }
        });
  });
}

template <int VI, int NT>
__device__ __forceinline__ void down_group(const MxExpert& e, const int (&member)[kVariants[VI].group], int Z, int I,
                                           const double* hs, double* d, double* smem, const uint32_t* lut) {
  using V = Var<VI>;
  constexpr int R = rows_for(V::rd, NT);
  const double* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = hs + int64_t(member[t]) * I;
  const uint8_t* packed[1] = {static_cast<const uint8_t*>(e.down_packed)};
  const uint8_t* scale[1] = {static_cast<const uint8_t*>(e.down_scale)};
  const int lane = threadIdx.x & 31;
  with_rows<VI, NT>(xs, I, smem, [&](auto xs_in_smem) {
    dot_groups<VI, 1, R, NT, decltype(xs_in_smem)::value>(
        packed, scale, Z, I, xs, blockIdx.x * V::warps + (threadIdx.x >> 5), gridDim.x * V::warps, lut,
        [&](int g, const double(&v)[1][R][NT]) {
          double dv = 0.0;
#pragma unroll
          for (int t = 0; t < NT; ++t)
#pragma unroll
            for (int q = 0; q < R; ++q)
              if (lane == q + R * t) dv = v[0][q][t];
          if (lane < R * NT) d[int64_t(member[lane / R]) * Z + int64_t(g) * R + lane % R] = dv;
        });
  });
}

// The decoding table of dec == 1: code c's high word (every block fills its own).
__device__ __forceinline__ void fill_lut(uint32_t* lut) {
  if (threadIdx.x < 16) lut[threadIdx.x] = k3::e2m1_high_word(threadIdx.x, 0);
  __syncthreads();
}

template <int VI>
__global__ void __launch_bounds__(kVariants[VI].warps * 32, kVariants[VI].minb)
    up_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot, int P, int k, int Z, int I,
              const double* __restrict__ zs, double* __restrict__ hs) {
  using V = Var<VI>;
  extern __shared__ double smem[];
  __shared__ uint32_t lut[16];
  pdl_enter();
  if constexpr (V::dec == 1) fill_lut(lut);
  int member[V::group];
  const int n = tiles::group_of<V::group>(slot, P, blockIdx.y, member);
  if (n == 0) return;
  const MxExpert e = table[slot[blockIdx.y]];
  by_group_size<V::group>(n,
                          [&](auto nt) { up_group<VI, decltype(nt)::value>(e, member, k, Z, I, zs, hs, smem, lut); });
}

template <int VI>
__global__ void __launch_bounds__(kVariants[VI].warps * 32, kVariants[VI].minb)
    down_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot, int P, int Z, int I,
                const double* __restrict__ hs, double* __restrict__ d) {
  using V = Var<VI>;
  extern __shared__ double smem[];
  __shared__ uint32_t lut[16];
  pdl_enter();
  if constexpr (V::dec == 1) fill_lut(lut);
  int member[V::group];
  const int n = tiles::group_of<V::group>(slot, P, blockIdx.y, member);
  if (n == 0) return;
  const MxExpert e = table[slot[blockIdx.y]];
  by_group_size<V::group>(n, [&](auto nt) { down_group<VI, decltype(nt)::value>(e, member, Z, I, hs, d, smem, lut); });
}

// Dynamic shared memory of a launch: the activation rows of up to xm pairs.
inline size_t smem_bytes(const Experts64Params& v, int width) { return size_t(v.xm) * width * sizeof(double); }

template <typename K>
void allow_smem(K kernel, size_t bytes, size_t& opted) {
  if (bytes > opted) {
    DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    opted = bytes;
  }
}

template <int VI>
void launch_variant(const Args& a, cudaStream_t s) {
  using V = Var<VI>;
  static size_t opted_up = 48 * 1024, opted_down = 48 * 1024;  // the most each kernel was allowed so far
  const size_t up_smem = smem_bytes(V::p, a.Z), down_smem = smem_bytes(V::p, a.I);
  allow_smem(up_kernel<VI>, up_smem, opted_up);
  allow_smem(down_kernel<VI>, down_smem, opted_down);
  DELTAFIN_CUDA_CHECK(
      launch(up_kernel<VI>, a.up_grid, V::warps * 32, up_smem, s, a.table, a.slot, a.P, a.k, a.Z, a.I, a.zs, a.hs));
  DELTAFIN_CUDA_CHECK(launch(down_kernel<VI>, a.down_grid, V::warps * 32, down_smem, s, a.table, a.slot, a.P, a.Z, a.I,
                             static_cast<const double*>(a.hs), a.d));
}

template <int P, int I>
constexpr Launcher pick() {
  if constexpr (I % kParts == P) return &launch_variant<I>;
  else return nullptr;
}

template <int P, int... I>
Launcher part_table(int v, std::integer_sequence<int, I...>) {
  static constexpr Launcher table[] = {pick<P, I>()...};
  return table[v];
}

}  // namespace deltafin::cuda::lab::experts64
