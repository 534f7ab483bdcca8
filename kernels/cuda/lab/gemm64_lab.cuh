#pragma once
// The lab's fp64 GEMV kernel template and its variant table (included by gemm64_lab*.cu only). The
// math is k3/gemm.cu's gemm64_kernel (read its comment): chunks of 32 of the width, a lane (row r =
// lane / 4, group q = lane % 4) holds the 8 BF16 weights q*8 .. q*8+7 of its row's chunk, which feed
// steps s = 0..7 of mma m8n8k4 (A[r][q] = W[r][q*8+s], B[q][n] = X[n][q*8+s]); weights widened by
// shifts to the weight times 2^-896, activations times 2^769, sums times 2^127 at the end.
//
// Order of each output (o, t): the width's chunks are cut into ks contiguous block ranges; in a range,
// warp slice p of ws takes chunks p, p + ws, ... in order, its steps in order into accumulator set
// (s % acc); the sets are added in set order, the slices in slice order, the block ranges in range
// order. That depends on the width and (ws, acc, ks) only: mt, rw, d, xm and pf move loads, never a
// sum, and no order depends on T or on where an output lands (batch invariant). With ws = 8, acc = 1,
// ks = 1 it is the product's order, bit for bit.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/cuda_common.cuh"
#include "cuda/k3/gemm64_tiles.cuh"
#include "cuda/lab/gemm64_lab.h"

namespace deltafin::cuda::lab::gemm64 {

// The sweep's variants (nt2 = 0 where the two-column-tile build spills: those run T <= 8 only). Order-changing
// parameters (ws, acc, ks) are few; the rest is about bytes in flight, the activations' latency and how the rows spread
// over the SMs.
inline constexpr Gemm64Params kVariants[] = {
    // the product's three shapes (ws 8, d = 4 / mt)
    {8, 1, 4, 1, 0, 1, 1, 0, 1},
    {8, 1, 2, 2, 0, 1, 1, 0, 1},
    {8, 1, 1, 4, 0, 1, 1, 0, 1},
    // more weight bytes in flight per lane
    {8, 1, 4, 2, 0, 1, 1, 0, 1},
    {8, 1, 2, 4, 0, 1, 1, 0, 1},
    {8, 1, 1, 8, 0, 1, 1, 0, 1},
    // fewer / more warps across the width
    {4, 1, 4, 2, 0, 1, 1, 0, 1},
    {4, 1, 2, 4, 0, 1, 1, 0, 1},
    {16, 1, 1, 4, 0, 1, 1, 0, 1},
    {16, 1, 2, 2, 0, 1, 1, 0, 0},
    {16, 1, 1, 8, 0, 1, 1, 0, 0},
    // row groups sharing the activations (more rows per block, activations once per SM through L1)
    {4, 2, 4, 1, 0, 1, 1, 0, 1},
    {4, 2, 2, 2, 0, 1, 1, 0, 1},
    {4, 4, 2, 2, 0, 1, 1, 0, 0},
    {8, 2, 2, 2, 0, 1, 1, 0, 0},
    {8, 2, 4, 1, 0, 1, 1, 0, 1},
    {4, 4, 1, 4, 0, 1, 1, 0, 1},
    {4, 4, 2, 1, 0, 1, 1, 0, 1},
    // more rows per warp (each activation load feeds 64 weight rows)
    {8, 1, 8, 1, 0, 1, 1, 0, 1},
    // activations loaded one round ahead, with the weights
    {8, 1, 4, 1, 1, 1, 1, 0, 1},
    {8, 1, 2, 2, 1, 1, 1, 0, 1},
    {8, 1, 1, 4, 1, 1, 1, 0, 0},
    {4, 2, 2, 2, 1, 1, 1, 0, 1},
    // activations staged once per block in shared memory (T * in doubles: T <= 2 at in = 7168)
    {8, 1, 4, 1, 2, 1, 1, 0, 1},
    {8, 1, 2, 2, 2, 1, 1, 0, 1},
    {8, 1, 1, 4, 2, 1, 1, 0, 1},
    {16, 1, 1, 4, 2, 1, 1, 0, 1},
    // two accumulator chains
    {8, 1, 4, 1, 0, 2, 1, 0, 1},
    {8, 1, 2, 2, 0, 2, 1, 0, 1},
    {8, 1, 1, 4, 0, 2, 1, 0, 1},
    {8, 1, 2, 2, 1, 2, 1, 0, 0},
    // first weights before the wait on the previous kernel
    {8, 1, 4, 1, 0, 1, 1, 1, 1},
    {8, 1, 2, 2, 0, 1, 1, 1, 1},
    {8, 1, 1, 4, 0, 1, 1, 1, 1},
    // the width split over two blocks (narrow matrices: twice the blocks)
    {8, 1, 1, 4, 0, 1, 2, 0, 1},
    {16, 1, 1, 4, 0, 1, 2, 0, 1},
    {8, 1, 1, 8, 0, 1, 2, 0, 1},
    {8, 1, 1, 4, 1, 2, 2, 1, 0},
    // combinations
    {8, 1, 2, 2, 1, 2, 1, 1, 0},
    {4, 2, 2, 2, 1, 2, 1, 1, 0},
};
inline constexpr int kCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));
inline constexpr int kParts = 4;  // gemm64_lab_part<N>.cu, compiled in parallel

struct Args {
  const uint16_t* w;
  int64_t out, in;
  bool vec, xvec;
  const double* x;
  int64_t ldx;
  int T;
  double* y;
  int64_t ldy;
  double* scratch;
  unsigned* counters;
};
using Launcher = void (*)(const Args&, cudaStream_t);
// Part P's launcher of variant v (gemm64_lab_part<P>.cu), nullptr when v is not that part's.
Launcher part0_launcher(int v);
Launcher part1_launcher(int v);
Launcher part2_launcher(int v);
Launcher part3_launcher(int v);

constexpr int kChunk = 32;
// The product's building blocks (k3/gemm64_tiles.cuh): the same MMA, widening and loads.
using Chunk8 = k3::gemm64::Chunk8<uint16_t>;
using k3::gemm64::dmma;
using k3::gemm64::load_x8;
constexpr double kXScale = Chunk8::kXScale, kYScale = Chunk8::kYScale;

// A block: rw row groups of ws warps; row group g takes mt row tiles of 8 rows, each warp slice p of its
// ws the chunks p, p + ws, ... of the block's width range (blockIdx.y of ks), d of them per round, the
// next round's loads issued before this round's products. NT column tiles of 8 activation rows at a time.
template <int WS, int RW, int MT, int NT, int D, int XM, int ACC, int KS, int PF>
__global__ void __launch_bounds__(32 * WS * RW, 1)
    gemm64_lab_kernel(const uint16_t* __restrict__ w, int64_t out, int64_t in, bool vec, bool xvec,
                      const double* __restrict__ x, int64_t ldx, int T, double* __restrict__ y, int64_t ldy,
                      double* __restrict__ scratch, unsigned* __restrict__ counters) {
  constexpr int kThreads = WS * RW * 32;
  extern __shared__ double smem[];
  double* part = smem;                         // [RW][WS][MT][NT][2][32]
  double* xs = smem + RW * WS * MT * NT * 64;  // [T][in] scaled activations (XM == 2)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
  const int p = warp % WS, g = warp / WS;
  const int64_t ob = int64_t(blockIdx.x) * RW * MT * 8;  // the block's first row
  const int64_t o0 = ob + int64_t(g) * MT * 8;           // the warp's
  const int64_t chunks = (in + kChunk - 1) / kChunk;
  const int64_t per = (chunks + KS - 1) / KS;
  const int64_t cbeg = int64_t(blockIdx.y) * per, cend = chunks < cbeg + per ? chunks : cbeg + per;
  auto load_round = [&](Chunk8(&wt)[D][MT], int64_t c) {
#pragma unroll
    for (int j = 0; j < D; ++j)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int64_t cj = c + j * WS;
        wt[j][mt].load(w + (o0 + mt * 8 + r) * in, cj * kChunk + q * 8, in, vec, cj < cend && o0 + mt * 8 + r < out);
      }
  };
  auto load_xchunk = [&](double(&xb)[NT][8], int64_t cj, int t0) {
    const int64_t k = cj * kChunk + q * 8;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int t = t0 + nt * 8 + r;
      const bool live = t < T && cj < cend;
      if constexpr (XM == 2) {
#pragma unroll
        for (int s = 0; s < 8; ++s) xb[nt][s] = live && k + s < in ? xs[int64_t(t) * in + k + s] : 0.0;
      } else {
        load_x8(xb[nt], x + int64_t(t) * ldx, k, in, xvec, live, kXScale);
      }
    }
  };
  constexpr int XD = XM == 1 ? D : 1;  // activation chunks held one round ahead
  auto load_xround = [&](double(&xr)[XD][NT][8], int64_t c, int t0) {
#pragma unroll
    for (int j = 0; j < XD; ++j) load_xchunk(xr[j], c + j * WS, t0);
  };

  Chunk8 cur[D][MT];
  if constexpr (PF) load_round(cur, cbeg + p);  // weights: never written by a kernel
  pdl_enter();
  if constexpr (XM == 2) {
    for (int t = 0; t < T; ++t) {
      const double* xr = x + int64_t(t) * ldx;
      double* sr = xs + int64_t(t) * in;
      if (xvec && in % 2 == 0) {
        for (int64_t k = 2 * int64_t(threadIdx.x); k < in; k += 2 * kThreads) {
          const double2 v = __ldg(reinterpret_cast<const double2*>(xr + k));
          sr[k] = v.x * kXScale;
          sr[k + 1] = v.y * kXScale;
        }
      } else {
        for (int64_t k = threadIdx.x; k < in; k += kThreads) sr[k] = __ldg(xr + k) * kXScale;
      }
    }
    __syncthreads();
  }
  for (int t0 = 0; t0 < T; t0 += 8 * NT) {
    double d[ACC][MT][NT][2];
#pragma unroll
    for (int a = 0; a < ACC; ++a)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) d[a][mt][nt][0] = d[a][mt][nt][1] = 0.0;
    if (!PF || t0 > 0) load_round(cur, cbeg + p);
    double xcur[XD][NT][8];
    if constexpr (XM == 1) load_xround(xcur, cbeg + p, t0);
    for (int64_t c = cbeg + p; c < cend; c += int64_t(WS) * D) {
      Chunk8 nxt[D][MT];
      load_round(nxt, c + int64_t(WS) * D);
      double xnxt[XD][NT][8];
      if constexpr (XM == 1) load_xround(xnxt, c + int64_t(WS) * D, t0);
#pragma unroll
      for (int j = 0; j < D; ++j) {
        const int64_t cj = c + j * WS;
        if (cj >= cend) break;
        double xl[NT][8];
        if constexpr (XM != 1) load_xchunk(xl, cj, t0);
        const double(&xb)[NT][8] = XM == 1 ? xcur[XM == 1 ? j : 0] : xl;
#pragma unroll
        for (int s = 0; s < 8; ++s)
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            const double a = cur[j][mt].at(s);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) dmma(d[s % ACC][mt][nt][0], d[s % ACC][mt][nt][1], a, xb[nt][s]);
          }
      }
#pragma unroll
      for (int j = 0; j < D; ++j)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) cur[j][mt] = nxt[j][mt];
      if constexpr (XM == 1) {
#pragma unroll
        for (int j = 0; j < XD; ++j)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int s = 0; s < 8; ++s) xcur[j][nt][s] = xnxt[j][nt][s];
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          double v = d[0][mt][nt][i];
#pragma unroll
          for (int a = 1; a < ACC; ++a) v += d[a][mt][nt][i];
          part[((((g * WS + p) * MT + mt) * NT + nt) * 2 + i) * 32 + lane] = v;
        }
    __syncthreads();
    for (int j = threadIdx.x; j < RW * MT * NT * 64; j += kThreads) {
      const int ln = j % 32, i = (j / 32) % 2, nt = (j / 64) % NT, mt = (j / (64 * NT)) % MT, gg = j / (64 * NT * MT);
      double v = 0.0;
#pragma unroll
      for (int pp = 0; pp < WS; ++pp) {
        const double u = part[((((gg * WS + pp) * MT + mt) * NT + nt) * 2 + i) * 32 + ln];
        v = pp == 0 ? u : v + u;
      }
      const int64_t o = ob + (int64_t(gg) * MT + mt) * 8 + (ln >> 2);
      const int t = t0 + nt * 8 + 2 * (ln & 3) + i;
      if (o < out && t < T) {
        if constexpr (KS == 1) y[int64_t(t) * ldy + o] = v * kYScale;
        else scratch[(int64_t(blockIdx.y) * T + t) * out + o] = v;
      }
    }
    __syncthreads();  // the partial sums are read before the next columns overwrite them
  }
  if constexpr (KS > 1) {
    // The last of the row tile's ks blocks to finish adds the ranges' sums in range order.
    __shared__ unsigned last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&counters[blockIdx.x], 1u) == KS - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int64_t rows = RW * MT * 8;
    for (int64_t j = threadIdx.x; j < rows * T; j += kThreads) {
      const int t = static_cast<int>(j / rows);
      const int64_t o = ob + j % rows;
      if (o >= out) continue;
      double v = __ldcg(scratch + int64_t(t) * out + o);
#pragma unroll
      for (int h = 1; h < KS; ++h) v += __ldcg(scratch + (int64_t(h) * T + t) * out + o);
      y[int64_t(t) * ldy + o] = v * kYScale;
    }
    if (threadIdx.x == 0) counters[blockIdx.x] = 0;  // for the next call
  }
}

inline size_t smem_bytes(const Gemm64Params& v, int NT, int T, int64_t in) {
  size_t b = size_t(v.rw) * v.ws * v.mt * NT * 64 * sizeof(double);
  if (v.xm == 2) b += size_t(T) * in * sizeof(double);
  return b;
}

template <int I, int NT>
void launch_nt(const Args& a, cudaStream_t s) {
  constexpr Gemm64Params V = kVariants[I];
  constexpr auto kernel = gemm64_lab_kernel<V.ws, V.rw, V.mt, NT, V.d, V.xm, V.acc, V.ks, V.pf>;
  const size_t smem = smem_bytes(V, NT, a.T, a.in);
  static size_t opted = 48 * 1024;  // the most this kernel was allowed so far
  if (smem > opted) {
    DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    opted = smem;
  }
  const dim3 grid(static_cast<unsigned>((a.out + 8 * V.mt * V.rw - 1) / (8 * V.mt * V.rw)), V.ks);
  DELTAFIN_CUDA_CHECK(launch(kernel, grid, V.ws * V.rw * 32, smem, s, a.w, a.out, a.in, a.vec, a.xvec, a.x, a.ldx, a.T,
                             a.y, a.ldy, a.scratch, a.counters));
}

template <int I>
void launch_variant(const Args& a, cudaStream_t s) {
  if constexpr (kVariants[I].nt2) {
    if (a.T > 8) return launch_nt<I, 2>(a, s);
  }
  launch_nt<I, 1>(a, s);
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

}  // namespace deltafin::cuda::lab::gemm64
