// K3's matrix products in fp64 (BF16 or fp32 weights widened exactly), embedding rows, RMSNorm and
// the logits' one rounding.
#include <atomic>
#include <cstddef>
#include <utility>

#include "cuda/k3/gemm64_tiles.cuh"
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// Y = W . X on the fp64 tensor cores (mma m8n8k4: D[8 rows][8 columns] += A[8][4] . B[4][8]). The
// weight rows are A's rows, the activation rows B's columns. The width is cut into chunks of 32; a
// row group's kSplit warps take chunks w, w + kSplit, ... (together a contiguous 512-byte span of
// each BF16 row per step) and a warp's lane (row r = lane / 4, group q = lane % 4) loads the 8
// elements q*8 .. q*8+7 of its row's chunk, which feed step s = 0..7 of the chunk: A[r][q] = W[r][q*8
// + s], B[q][n] = X[n][q*8 + s]. Each output (o, t) is therefore: per warp, one MMA accumulation over
// its chunks and steps in order; then the warps' partial sums added in warp order. That order depends
// on the width only, never on T, on which column a row lands in or on which kernel gemm_variant picks
// (row groups, row tiles, loads in flight and where the activations come from move loads, never a
// sum): every output is the same bits whatever the batch, and no shuffle or atomic is involved.
//
// BF16 weights become doubles by two shifts and a mask each: the 15 exponent and mantissa bits at
// bits 13..27 of the high word are the weight times 2^-896 exactly (zero and BF16's subnormals
// included). The activations are taken times 2^769 and the sums times 2^127 at the end, so every
// product and partial sum is the unscaled one times 2^-127, an exact power of two: the same
// roundings as the unscaled fp64 arithmetic while |x| < 2^255 and the sums stay above 2^-895.
constexpr int kSplit = 8;   // warps per row group, each a slice of the width's chunks
constexpr int kChunk = 32;  // width elements per warp step: 4 lane groups x 8

using gemm64::Chunk8;
using gemm64::dmma;
using gemm64::load_x8;

// A block is RW row groups of kSplit warps; a group computes MT row tiles of 8 rows for every
// activation row, NT column tiles of 8 at a time. A warp takes its chunks D at a time (D = 4 / MT:
// every lane keeps four 16-byte weight loads per round, so narrow matrices, with fewer warps over the
// GPU, have as many bytes in flight as wide ones) and loads the next round's while it multiplies this
// one's; the chunks are multiplied in the same order whatever D is. Two row groups (RW = 2) give a
// block twice the rows over the same activations, which its SM then reads from L1 once for both.
// The activations (times kXScale) come either from global memory at each chunk (XM = 0) or from a
// copy of all T rows the block stages in shared memory at its start (XM = 2; T * in doubles, for
// T <= 2): then no MMA waits on an activation load from L2, which at T = 1, 2 costs narrow matrices,
// with few weight bytes per activation byte, more than the copy does.
template <typename W, int RW, int MT, int NT, int XM>
__global__ void __launch_bounds__(kSplit* RW * 32, 1)
    gemm64_kernel(const W* __restrict__ w, int64_t out, int64_t in, bool vec, bool xvec, const double* __restrict__ x,
                  int64_t ldx, int T, double* __restrict__ y, int64_t ldy) {
  using C8 = Chunk8<W>;
  constexpr int D = 4 / MT, kThreads = kSplit * RW * 32;
  extern __shared__ double smem[];
  double* part = smem;                             // [RW][kSplit][MT][NT][2][32] the warps' partial sums
  double* xs = smem + RW * kSplit * MT * NT * 64;  // [T][in] the activations times kXScale (XM == 2)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
  const int p = warp % kSplit, g = warp / kSplit;        // the warp's slice of the width, its row group
  const int64_t ob = int64_t(blockIdx.x) * RW * MT * 8;  // the block's first row
  const int64_t o0 = ob + int64_t(g) * MT * 8;           // the warp's
  // The block's chunks [c0, c1): all of them. For BF16 weights they are written as the range of block
  // row blockIdx.y (always 0: the grid has one row), a start ptxas cannot fold: its register allocation
  // is then that of the lab kernels gemm_variant's figures were measured with (the same counts), and two
  // row groups at NT = 2 fit 512 threads' 128 registers (124; from a constant start they spill). fp32
  // weights (not measured) keep the constant start, which needs fewer registers there.
  constexpr bool kOpaqueStart = sizeof(W) == 2;
  const int64_t chunks = (in + kChunk - 1) / kChunk;
  const int64_t c0 = kOpaqueStart ? int64_t(blockIdx.y) * chunks : 0, c1 = chunks < c0 + chunks ? chunks : c0 + chunks;
  // Chunk j of the round starting at chunk c: c + j * kSplit.
  auto load_round = [&](C8(&wt)[D][MT], int64_t c) {
#pragma unroll
    for (int j = 0; j < D; ++j)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int64_t cj = c + j * kSplit;
        wt[j][mt].load(w + (o0 + mt * 8 + r) * in, cj * kChunk + q * 8, in, vec, cj < c1 && o0 + mt * 8 + r < out);
      }
  };
  pdl_enter();
  if constexpr (XM == 2) {
    for (int t = 0; t < T; ++t) {
      const double* xr = x + int64_t(t) * ldx;
      double* sr = xs + int64_t(t) * in;
      if (xvec && in % 2 == 0) {
        for (int64_t k = 2 * int64_t(threadIdx.x); k < in; k += 2 * kThreads) {
          const double2 v = __ldg(reinterpret_cast<const double2*>(xr + k));
          sr[k] = v.x * C8::kXScale;
          sr[k + 1] = v.y * C8::kXScale;
        }
      } else {
        for (int64_t k = threadIdx.x; k < in; k += kThreads) sr[k] = __ldg(xr + k) * C8::kXScale;
      }
    }
    __syncthreads();
  }
  for (int t0 = 0; t0 < T; t0 += 8 * NT) {
    double d[MT][NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) d[mt][nt][0] = d[mt][nt][1] = 0.0;
    C8 cur[D][MT];
    load_round(cur, c0 + p);
    for (int64_t c = c0 + p; c < c1; c += int64_t(kSplit) * D) {
      C8 nxt[D][MT];
      load_round(nxt, c + int64_t(kSplit) * D);
#pragma unroll
      for (int j = 0; j < D; ++j) {
        const int64_t cj = c + j * kSplit;
        if (cj >= c1) break;
        const int64_t k = cj * kChunk + q * 8;
        double xb[NT][8];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int t = t0 + nt * 8 + r;
          if constexpr (XM == 2) {
#pragma unroll
            for (int s = 0; s < 8; ++s) xb[nt][s] = t < T && k + s < in ? xs[int64_t(t) * in + k + s] : 0.0;
          } else {
            load_x8(xb[nt], x + int64_t(t) * ldx, k, in, xvec, t < T, C8::kXScale);
          }
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
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 2; ++i) part[((((g * kSplit + p) * MT + mt) * NT + nt) * 2 + i) * 32 + lane] = d[mt][nt][i];
    __syncthreads();
    for (int j = threadIdx.x; j < RW * MT * NT * 64; j += kThreads) {
      const int ln = j % 32, i = (j / 32) % 2, nt = (j / 64) % NT, mt = (j / (64 * NT)) % MT, gg = j / (64 * NT * MT);
      double v = part[((((gg * kSplit) * MT + mt) * NT + nt) * 2 + i) * 32 + ln];
#pragma unroll
      for (int pp = 1; pp < kSplit; ++pp) v += part[((((gg * kSplit + pp) * MT + mt) * NT + nt) * 2 + i) * 32 + ln];
      const int64_t o = ob + (int64_t(gg) * MT + mt) * 8 + (ln >> 2);
      const int t = t0 + nt * 8 + 2 * (ln & 3) + i;
      if (o < out && t < T) y[int64_t(t) * ldy + o] = v * C8::kYScale;
    }
    __syncthreads();  // the partial sums are read before the next columns overwrite them
  }
}

// The kernels gemm_variant picks among (lab names s8r{rw}m{mt}d{4/mt}x{xm}a1k1p0 of
// deltafin-cuda-k3-bench gemm-sweep): row groups per block, row tiles per warp, column tiles per
// pass, activations at use (0) or staged in shared memory (2).
struct GemmVariant {
  int rw, mt, nt, xm;
};
enum : int { kM1, kM1Staged, kM2, kM2Staged, kM4, kM1Nt2, kM2Nt2, kM4Nt2, kR2M4Nt2, kVariantCount };
constexpr GemmVariant kVariants[kVariantCount] = {
    {1, 1, 1, 0}, {1, 1, 1, 2}, {1, 2, 1, 0}, {1, 2, 1, 2}, {1, 4, 1, 0},
    {1, 1, 2, 0}, {1, 2, 2, 0}, {1, 4, 2, 0}, {2, 4, 2, 0},
};

// Dynamic shared memory of variant v for T rows of width `in`: the partial sums, and the staged
// activations.
constexpr size_t smem_bytes(const GemmVariant& v, int T, int64_t in) {
  const size_t part = size_t(v.rw) * kSplit * v.mt * v.nt * 64 * sizeof(double);
  return v.xm == 2 ? part + size_t(T) * size_t(in) * sizeof(double) : part;
}

// The variant with v's row tiles and column tiles, one row group and the activations at use: at most
// 32 KB of shared memory, which every launch may have.
constexpr int plain_variant(int v) {
  for (int i = 0; i < kVariantCount; ++i)
    if (kVariants[i].rw == 1 && kVariants[i].mt == kVariants[v].mt && kVariants[i].nt == kVariants[v].nt &&
        kVariants[i].xm == 0)
      return i;
  return -1;
}
static_assert(plain_variant(kR2M4Nt2) == kM4Nt2 && plain_variant(kM1Staged) == kM1 && plain_variant(kM2Staged) == kM2);
static_assert(smem_bytes(kVariants[kM4Nt2], 16, 0) <= 48 * 1024);

// The policy: one kernel per class of `out` (rows) and of T. Every variant sums in the same order
// (see above), so this is a choice of speed only and no output depends on it. Measured on an H100,
// 2026-12-06, `deltafin-cuda-k3-bench gemm-sweep`: % of the device-to-device copy rate at in = 7168,
// BF16 weights, out = 896, 1536, 3584, 7168 and 163840 (the lm_head) for the classes below; in
// brackets the kernel with MT by rows alone (4 from 4096 rows, 2 from 1024, else 1) and activations
// loaded one double at a time:
//
//   out          T = 1            T = 2            T = 3..8                 T = 9..16 (NT = 2)
//   < 1024       m1x2 34.4 [16.1] m1x2 31.2 [15.6] m1x0 20.1-23.4 [14.8-13.7] m1x0   14.1 [9.2]
//   1024-2047    m2x2 41.1 [27.5] m2x2 38.4 [26.8] m1x0 29.3-31.5 [25.5-23.5] m2x0   18.0 [14.2]
//   2048-4095    m2x2 58.1 [47.4] m2x0 49.1 [49.8] m2x0 47.8-50.5 [46.7-41.6] m4x0   25.1 [23.8]
//   4096-16383   m4x0 65.1 [63.7] m4x0 64.6 [62.6] m4x0 66.0-66.6 [60.1-56.4] r2m4x0 39.1 [33.8]
//   >= 16384     m2x2 82.1 [74.5] m4x0 74.0 [72.9] m4x0 76.3-76.9 [69.9-65.9] r2m4x0 45.2 [41.4]
//
// (m: row tiles per warp, x2: activations staged, r2: two row groups.) At NT = 2 one row group of four
// row tiles needs 130 registers, so one block of 8 warps per SM (25.8 at 7168 rows); two row groups
// (124 registers, 16 warps per SM) share the activations and are faster than both. T above 16 loops over pairs of
// column tiles. Staging needs T * in doubles of shared memory beside the partial sums; where the device cannot give
// them (in above about 28000 at T = 1, 14000 at T = 2 on an H100's 227 KB) the same tiles load the activations at use.
// fp32 weights (not measured) take the same kernels but one row group: two would spill their 8-register weight chunks.
constexpr int kPolicy[5][4] = {
    {kM1Staged, kM1Staged, kM1, kM1Nt2},  // out < 1024
    {kM2Staged, kM2Staged, kM1, kM2Nt2},  // 1024 <= out < 2048
    {kM2Staged, kM2, kM2, kM4Nt2},        // 2048 <= out < 4096
    {kM4, kM4, kM4, kR2M4Nt2},            // 4096 <= out < 16384
    {kM2Staged, kM4, kM4, kR2M4Nt2},      // out >= 16384
};

int gemm_variant(int64_t out, int64_t in, int T, bool bf16, size_t smem_optin) {
  const int oc = out < 1024 ? 0 : out < 2048 ? 1 : out < 4096 ? 2 : out < 16384 ? 3 : 4;
  const int tc = T == 1 ? 0 : T == 2 ? 1 : T <= 8 ? 2 : 3;
  const int v = kPolicy[oc][tc];
  return (bf16 || kVariants[v].rw == 1) && smem_bytes(kVariants[v], T, in) <= smem_optin ? v : plain_variant(v);
}

constexpr int kMaxDevices = 64;

// The dynamic shared memory a block may opt in to on device `dev`, asked once per device.
size_t smem_optin(int dev) {
  static std::atomic<int> bytes[kMaxDevices];
  int b = bytes[dev].load(std::memory_order_relaxed);
  if (b == 0) {
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&b, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    bytes[dev].store(b, std::memory_order_relaxed);
  }
  return size_t(b);
}

template <typename W>
struct GemmArgs {
  const W* w;
  int64_t out, in;
  bool vec, xvec;  // 16-byte loads of the weights, of pairs of activations
  const double* x;
  int64_t ldx;
  int T;
  double* y;
  int64_t ldy;
};

template <typename W, int V>
void launch_variant(const GemmArgs<W>& a, int dev, size_t optin, cudaStream_t s) {
  constexpr GemmVariant v = kVariants[V];
  constexpr auto kernel = gemm64_kernel<W, v.rw, v.mt, v.nt, v.xm>;
  const size_t smem = smem_bytes(v, a.T, a.in);
  if (smem > 48 * 1024) {
    // Once per device (the attribute is the device's), all the device allows: a launch still
    // takes only the shared memory it asks for.
    static std::atomic<uint64_t> opted{0};
    const uint64_t bit = uint64_t(1) << dev;
    if (!(opted.load(std::memory_order_relaxed) & bit)) {
      DELTAFIN_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(optin)));
      opted.fetch_or(bit, std::memory_order_relaxed);
    }
  }
  const unsigned grid = static_cast<unsigned>((a.out + 8 * v.mt * v.rw - 1) / (8 * v.mt * v.rw));
  DELTAFIN_CUDA_CHECK(
      launch(kernel, grid, kSplit * v.rw * 32, smem, s, a.w, a.out, a.in, a.vec, a.xvec, a.x, a.ldx, a.T, a.y, a.ldy));
}

template <typename W>
using Launcher = void (*)(const GemmArgs<W>&, int, size_t, cudaStream_t);

// Variant V's launcher; none for two row groups over fp32 weights, which gemm_variant never picks.
template <typename W, int V>
constexpr Launcher<W> launcher() {
  if constexpr (sizeof(W) == 2 || kVariants[V].rw == 1) return &launch_variant<W, V>;
  else return nullptr;
}

template <typename W, int... V>
void launch_gemm(int v, const GemmArgs<W>& a, int dev, size_t optin, cudaStream_t s, std::integer_sequence<int, V...>) {
  static constexpr Launcher<W> table[] = {launcher<W, V>()...};
  table[v](a, dev, optin, s);
}

template <typename W>
void gemm_typed(const W* w, int64_t out, int64_t in, const double* x, int64_t ldx, int T, double* y, int64_t ldy,
                cudaStream_t s) {
  int dev = 0;
  DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= kMaxDevices) throw CudaError("k3::gemm: device index above 63");
  const size_t optin = smem_optin(dev);
  const GemmArgs<W> a{w,
                      out,
                      in,
                      in % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0,
                      ldx % 2 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0,
                      x,
                      ldx,
                      T,
                      y,
                      ldy};
  launch_gemm(gemm_variant(out, in, T, sizeof(W) == 2, optin), a, dev, optin, s,
              std::make_integer_sequence<int, kVariantCount>{});
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
