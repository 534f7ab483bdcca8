// MLA over the absorbed latent cache: query absorption, attention (scores, softmax, mix), values.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// Weights by type, widened to fp64 exactly (BF16 bits are the high half of an fp32).
__device__ __forceinline__ double widen(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }
__device__ __forceinline__ double widen(float f) { return f; }

// Four consecutive weights of a row in one load: element c of the vector, widened.
template <typename W>
struct Quad;
template <>
struct Quad<uint16_t> {
  using Vec = uint2;
  static __device__ __forceinline__ double at(const Vec& v, int c) {
    const uint32_t w = c < 2 ? v.x : v.y;
    return (c & 1) ? bf16_hi(w) : bf16_lo(w);
  }
};
template <>
struct Quad<float> {
  using Vec = float4;
  static __device__ __forceinline__ double at(const Vec& v, int c) {
    return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
  }
};

constexpr int kStageLoads = 8;  // loads per thread in flight while staging

// store(i, load(i)) for i < n over the block's threads, kStageLoads loads in flight per thread.
template <class L, class S>
__device__ __forceinline__ void stage_block(int n, L load, S store) {
  for (int i0 = threadIdx.x; i0 < n; i0 += kStageLoads * blockDim.x) {
    double v[kStageLoads];
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int i = i0 + u * blockDim.x;
      v[u] = i < n ? load(i) : 0.0;
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
__global__ void __launch_bounds__(kAbsorbThreads, 1)
    mla_absorb_kernel(const double* __restrict__ q, const W* __restrict__ kvb, int nh, int N, int P, int Vd, int R,
                      int T, double* __restrict__ qabs) {
  pdl_enter();
  extern __shared__ double qs[];  // [kRows][N], zero past row T
  using Vec = typename Quad<W>::Vec;
  constexpr int kAbsorbLoads = 256 / sizeof(Vec);
  const int h = blockIdx.y, t0 = blockIdx.z * kRows;
  stage_block(
      kRows * N,
      [&](int i) {
        const int r = i / N, n = i % N;
        return t0 + r < T ? q[(int64_t(t0 + r) * nh + h) * (N + P) + n] : 0.0;
      },
      [&](int i, double v) { qs[i] = v; });
  __syncthreads();
  const int j = (blockIdx.x * kAbsorbThreads + threadIdx.x) * kAbsorbCols;
  if (j >= R) return;
  const W* wp = kvb + int64_t(h) * (N + Vd) * R + j;
  double acc[kRows][kAbsorbCols] = {};
  auto fma_row = [&](const Vec& w, int n) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const double qv = qs[r * N + n];
#pragma unroll
      for (int c = 0; c < kAbsorbCols; ++c) acc[r][c] = __fma_rn(qv, Quad<W>::at(w, c), acc[r][c]);
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
__global__ void mla_absorb_column_kernel(const double* q, const W* kvb, int nh, int N, int P, int Vd, int R,
                                         double* qabs) {
  pdl_enter();
  const int th = blockIdx.y;  // t * nh + h
  const int h = th % nh;
  const double* qn = q + int64_t(th) * (N + P);
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < R; j += gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int n = 0; n < N; ++n) acc = __fma_rn(qn[n], widen(kvb[(int64_t(h) * (N + Vd) + n) * R + j]), acc);
    qabs[int64_t(th) * R + j] = acc;
  }
}

// The attention over the latent cache in three launches, each output computed exactly as by one
// block per (row, head) walking the positions in order (the first kernel, kept in
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
// (nsys on the H200). The order of every chain is unchanged.
constexpr int kAttHeads = 8;  // heads per block in the score and mix launches
constexpr int kScoreWarps = 8;
constexpr int kScorePos = 2;                          // positions a warp scores at once
constexpr int kScoreChunk = kScoreWarps * kScorePos;  // positions per block and step: one per warp
constexpr int kScoreBlocks = 16;                      // blocks per (row, head group): chunks are dealt round-robin
constexpr int kScoreBatch = 8;                        // column steps (of 32) whose loads a lane issues together
constexpr int kSoftThreads = 256;                     // fixes the softmax's summation order
constexpr int kMixThreads = 128;                      // output columns per mix block
constexpr int kMixTile = 256;                         // probabilities per head staged at once
constexpr int kMixBatch = 16;  // positions whose cached values a thread loads together (32: as fast at
                               // context 64, 18-19% slower MLA layers at context 4096 and T=8)

__device__ __forceinline__ int64_t att_context(int64_t base, const int64_t* dev_base, int t) {
  return (dev_base ? *dev_base : base) + t + 1;
}

__global__ void __launch_bounds__(kScoreWarps * 32)
    mla_scores_kernel(const double* __restrict__ qabs, const double* __restrict__ q, const double* __restrict__ cache,
                      int64_t base, const int64_t* dev_base, int nh, int N, int R, int P, double scale,
                      double* __restrict__ scores, int64_t max_ctx) {
  pdl_enter();
  extern __shared__ double qs[];  // [kAttHeads][R + P]: absorbed query | rope query
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
        return hh >= hn ? 0.0 : j < R ? qabs[th * R + j] : q[th * (N + P) + N + (j - R)];
      },
      [&](int i, double v) { qs[i] = v; });
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // acc[p][hh] += q[hh][j] * row_p[j] for j = j0 + lane, j0 + lane + 32, ... < j1, in that order.
  auto dots = [&](const double* row, int np, int j0, int j1, double(&acc)[kScorePos][kAttHeads]) {
    for (int jb = j0 + lane; jb < j1; jb += 32 * kScoreBatch) {
      double c[kScoreBatch][kScorePos];
#pragma unroll
      for (int u = 0; u < kScoreBatch; ++u)
#pragma unroll
        for (int p = 0; p < kScorePos; ++p) {
          const int j = jb + 32 * u;
          c[u][p] = p < np && j < j1 ? row[int64_t(p) * W + j] : 0.0;
        }
#pragma unroll
      for (int u = 0; u < kScoreBatch; ++u) {
        const int j = jb + 32 * u;
        if (j >= j1) break;
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) {
          const double qv = qs[hh * W + j];
#pragma unroll
          for (int p = 0; p < kScorePos; ++p) acc[p][hh] = __fma_rn(qv, c[u][p], acc[p][hh]);
        }
      }
    }
  };
  for (int64_t c0 = int64_t(blockIdx.x) * kScoreChunk; c0 < ctx; c0 += int64_t(gridDim.x) * kScoreChunk) {
    const int64_t c1 = min(ctx, c0 + kScoreChunk);
    for (int64_t s0 = c0 + warp * kScorePos; s0 < c1; s0 += kScoreWarps * kScorePos) {
      const int np = c1 - s0 < kScorePos ? static_cast<int>(c1 - s0) : kScorePos;
      const double* row = cache + s0 * W;
      double a[kScorePos][kAttHeads] = {}, r[kScorePos][kAttHeads] = {};
      dots(row, np, 0, R, a);
      dots(row, np, R, W, r);
#pragma unroll
      for (int p = 0; p < kScorePos; ++p)
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) {
          const double ap = warp_sum(a[p][hh]), rp = warp_sum(r[p][hh]);
          if (lane == 0 && p < np && hh < hn)
            scores[(int64_t(t) * nh + h0 + hh) * max_ctx + s0 + p] = (ap + rp) * scale;
        }
    }
  }
}

// One block per (row, head): the scores of positions 0 .. ctx-1 become probabilities in place.
__global__ void __launch_bounds__(kSoftThreads)
    mla_softmax_kernel(int64_t base, const int64_t* dev_base, int nh, double* __restrict__ scores, int64_t max_ctx) {
  pdl_enter();
  __shared__ double sh[kSoftThreads / 32];
  const int th = blockIdx.x;
  const int64_t ctx = att_context(base, dev_base, th / nh);
  double* sc = scores + int64_t(th) * max_ctx;
  double mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) mx = fmax(mx, sc[s]);
  mx = block_max<kSoftThreads>(mx, sh);
  double sum = 0.0;
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) {
    const double e = exp(sc[s] - mx);
    sc[s] = e;
    sum += e;
  }
  sum = block_sum<kSoftThreads>(sum, sh);
  for (int64_t s = threadIdx.x; s < ctx; s += kSoftThreads) sc[s] = sc[s] / sum;
}

// Column j of kAttHeads heads per thread: each cached value loaded once feeds every head's chain.
__global__ void __launch_bounds__(kMixThreads)
    mla_mix_kernel(const double* __restrict__ cache, int64_t base, const int64_t* dev_base, int nh, int R, int P,
                   const double* __restrict__ probs, int64_t max_ctx, double* __restrict__ olat) {
  pdl_enter();
  __shared__ double ps[kMixTile][kAttHeads];
  const int groups = (nh + kAttHeads - 1) / kAttHeads;
  const int t = blockIdx.y / groups, h0 = (blockIdx.y % groups) * kAttHeads;
  const int hn = min(kAttHeads, nh - h0);
  const int64_t ctx = att_context(base, dev_base, t);
  const int W = R + P;
  const int j = blockIdx.x * kMixThreads + threadIdx.x;
  const int jc = min(j, R - 1);  // past R: computed, never stored
  const double* pr = probs + (int64_t(t) * nh + h0) * max_ctx;
  double acc[kAttHeads] = {};
  for (int64_t s0 = 0; s0 < ctx; s0 += kMixTile) {
    const int n = ctx - s0 < kMixTile ? static_cast<int>(ctx - s0) : kMixTile;
    __syncthreads();
    stage_block(
        kMixTile * kAttHeads,
        [&](int i) {
          const int hh = i / kMixTile, k = i % kMixTile;  // neighbouring threads, neighbouring positions
          return hh < hn && k < n ? pr[int64_t(hh) * max_ctx + s0 + k] : 0.0;
        },
        [&](int i, double v) { ps[i % kMixTile][i / kMixTile] = v; });
    __syncthreads();
    const double* col = cache + s0 * W + jc;
    for (int k0 = 0; k0 < n; k0 += kMixBatch) {
      double c[kMixBatch];
#pragma unroll
      for (int u = 0; u < kMixBatch; ++u) c[u] = k0 + u < n ? col[int64_t(k0 + u) * W] : 0.0;
#pragma unroll
      for (int u = 0; u < kMixBatch; ++u) {
        if (k0 + u >= n) break;
#pragma unroll
        for (int hh = 0; hh < kAttHeads; ++hh) acc[hh] = __fma_rn(ps[k0 + u][hh], c[u], acc[hh]);
      }
    }
  }
  if (j < R)
#pragma unroll
    for (int hh = 0; hh < kAttHeads; ++hh)
      if (hh < hn) olat[(int64_t(t) * nh + h0 + hh) * R + j] = acc[hh];
}

__global__ void rows_to_kernel(const double* __restrict__ src, int64_t width, double* __restrict__ dst,
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
__global__ void __launch_bounds__(kValueWarps * 32)
    mla_value_kernel(const double* __restrict__ olat, const W* __restrict__ kvb, int nh, int N, int R, int Vd, int T,
                     double* __restrict__ attn) {
  pdl_enter();
  constexpr int kValueLoads = 16;
  const int64_t hv = int64_t(blockIdx.x) * kValueWarps + (threadIdx.x >> 5);  // h * Vd + v
  const int lane = threadIdx.x & 31;
  if (hv >= int64_t(nh) * Vd) return;
  const int h = static_cast<int>(hv / Vd), vv = static_cast<int>(hv % Vd);
  const int t0 = blockIdx.y * kRows;
  const W* w = kvb + (int64_t(h) * (N + Vd) + N + vv) * R;
  const double* x[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    x[r] = olat + (int64_t(min(t0 + r, T - 1)) * nh + h) * R;  // rows past T: never stored
  double a[kRows] = {};
  int j0 = 0;
  for (; j0 + 32 * kValueLoads <= R; j0 += 32 * kValueLoads) {
    W wv[kValueLoads];
#pragma unroll
    for (int u = 0; u < kValueLoads; ++u) wv[u] = w[j0 + 32 * u + lane];
#pragma unroll
    for (int u = 0; u < kValueLoads; ++u)
#pragma unroll
      for (int r = 0; r < kRows; ++r) a[r] = __fma_rn(widen(wv[u]), x[r][j0 + 32 * u + lane], a[r]);
  }
  for (int j = j0 + lane; j < R; j += 32)
#pragma unroll
    for (int r = 0; r < kRows; ++r) a[r] = __fma_rn(widen(w[j]), x[r][j], a[r]);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    a[r] = warp_sum(a[r]);
    if (lane == 0 && t0 + r < T) attn[(int64_t(t0 + r) * nh + h) * Vd + vv] = a[r];
  }
}

template <typename W, int kRows>
void launch_absorb(const double* q, const W* w, int T, int nh, int N, int P, int Vd, int R, double* qabs,
                   cudaStream_t s) {
  const dim3 grid(blocks_for(R, kAbsorbThreads * kAbsorbCols), nh, (T + kRows - 1) / kRows);
  const size_t smem = size_t(kRows) * N * sizeof(double);
  DELTAFIN_CUDA_CHECK(
      launch(mla_absorb_kernel<W, kRows>, grid, kAbsorbThreads, smem, s, q, w, nh, N, P, Vd, R, T, qabs));
}

// Rows per block by T, as the BF16 row kernels pick theirs; a row's sums are the same in each.
template <typename W>
void absorb_rows(const double* q, const void* data, int T, int nh, int N, int P, int Vd, int R, double* qabs,
                 cudaStream_t s) {
  const W* w = static_cast<const W*>(data);
  const bool vectors = R % kAbsorbCols == 0 && reinterpret_cast<uintptr_t>(data) % (kAbsorbCols * sizeof(W)) == 0 &&
                       size_t(8) * N * sizeof(double) <= 48 * 1024;
  if (!vectors) {
    DELTAFIN_CUDA_CHECK(
        launch(mla_absorb_column_kernel<W>, dim3(blocks_for(R, 128), T * nh), 128, 0, s, q, w, nh, N, P, Vd, R, qabs));
    return;
  }
  if (T == 1) launch_absorb<W, 1>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else if (T == 2) launch_absorb<W, 2>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else if (T <= 4) launch_absorb<W, 4>(q, w, T, nh, N, P, Vd, R, qabs, s);
  else launch_absorb<W, 8>(q, w, T, nh, N, P, Vd, R, qabs, s);
}

template <typename W, int kRows>
void launch_value(const double* olat, const W* w, int T, int nh, int N, int R, int Vd, double* attn, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((int64_t(nh) * Vd + kValueWarps - 1) / kValueWarps), (T + kRows - 1) / kRows);
  DELTAFIN_CUDA_CHECK(launch(mla_value_kernel<W, kRows>, grid, kValueWarps * 32, 0, s, olat, w, nh, N, R, Vd, T, attn));
}

template <typename W>
void value_rows(const double* olat, const void* data, int T, int nh, int N, int R, int Vd, double* attn,
                cudaStream_t s) {
  const W* w = static_cast<const W*>(data);
  if (T == 1) launch_value<W, 1>(olat, w, T, nh, N, R, Vd, attn, s);
  else if (T == 2) launch_value<W, 2>(olat, w, T, nh, N, R, Vd, attn, s);
  else if (T <= 4) launch_value<W, 4>(olat, w, T, nh, N, R, Vd, attn, s);
  else launch_value<W, 8>(olat, w, T, nh, N, R, Vd, attn, s);
}

}  // namespace

void mla_absorb_q(const double* q, const DevMat& kv_b, int T, int nh, int N, int P, int Vd, double* qabs, Stream s) {
  if (T <= 0) return;
  const int R = static_cast<int>(kv_b.cols);
  if (kv_b.bf16) absorb_rows<uint16_t>(q, kv_b.data, T, nh, N, P, Vd, R, qabs, as_stream(s));
  else absorb_rows<float>(q, kv_b.data, T, nh, N, P, Vd, R, qabs, as_stream(s));
}

namespace {
void attend(const double* qabs, const double* q, const double* cache, int64_t base, const int64_t* dev_base, int T,
            int nh, int N, int R, int P, double scale, double* scores, int64_t max_ctx, double* olat, cudaStream_t s) {
  const int groups = (nh + kAttHeads - 1) / kAttHeads;
  const size_t smem = size_t(kAttHeads) * (R + P) * sizeof(double);
  static size_t opted = 48 * 1024;
  if (smem > opted) {
    DELTAFIN_CUDA_CHECK(
        cudaFuncSetAttribute(mla_scores_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    opted = smem;
  }
  const unsigned chunks =
      static_cast<unsigned>(std::min<int64_t>(kScoreBlocks, (max_ctx + kScoreChunk - 1) / kScoreChunk));
  DELTAFIN_CUDA_CHECK(launch(mla_scores_kernel, dim3(chunks, T * groups), kScoreWarps * 32, smem, s, qabs, q, cache,
                             base, dev_base, nh, N, R, P, scale, scores, max_ctx));
  DELTAFIN_CUDA_CHECK(launch(mla_softmax_kernel, T * nh, kSoftThreads, 0, s, base, dev_base, nh, scores, max_ctx));
  DELTAFIN_CUDA_CHECK(launch(mla_mix_kernel, dim3(blocks_for(R, kMixThreads), T * groups), kMixThreads, 0, s, cache,
                             base, dev_base, nh, R, P, static_cast<const double*>(scores), max_ctx, olat));
}
}  // namespace

void mla_attend(const double* qabs, const double* q, const double* cache, int64_t base, int T, int nh, int N, int R,
                int P, double scale, double* scores, int64_t max_ctx, double* olat, Stream s) {
  if (T <= 0) return;
  if (base + T > max_ctx) throw CudaError("mla_attend: context beyond the score scratch");
  attend(qabs, q, cache, base, nullptr, T, nh, N, R, P, scale, scores, max_ctx, olat, as_stream(s));
}

void mla_attend_at(const double* qabs, const double* q, const double* cache, const int64_t* dev_base, int T, int nh,
                   int N, int R, int P, double scale, double* scores, int64_t max_ctx, double* olat, Stream s) {
  if (T <= 0) return;
  attend(qabs, q, cache, 0, dev_base, T, nh, N, R, P, scale, scores, max_ctx, olat, as_stream(s));
}

void rows_to_at(const double* src, int T, int64_t width, double* dst, const int64_t* dev_row, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(
      launch(rows_to_kernel, dim3(blocks_for(width, 256), T), 256, 0, as_stream(s), src, width, dst, dev_row));
}

void mla_value(const double* olat, const DevMat& kv_b, int T, int nh, int N, int R, int Vd, double* attn, Stream s) {
  if (T <= 0) return;
  if (kv_b.bf16) value_rows<uint16_t>(olat, kv_b.data, T, nh, N, R, Vd, attn, as_stream(s));
  else value_rows<float>(olat, kv_b.data, T, nh, N, R, Vd, attn, as_stream(s));
}

}  // namespace deltafin::cuda::k3
