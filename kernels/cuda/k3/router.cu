// The MoE router: sigmoid scores, top-k by score + bias, ids ascending, weights renormalised.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// The router picks the top k of E keys (s + bias, ties to the lower id) with bitonic networks over
// warp registers instead of k rounds of block-wide argmax: each warp keeps its best kRouterList keys
// sorted, the warps' lists are merged pairwise, and warp 0 puts the first k in id order.
constexpr int kRouterThreads = 256;
constexpr int kRouterWarps = kRouterThreads / 32;
constexpr int kRouterSlots = 2;                 // keys per lane in a warp's list
constexpr int kRouterList = 32 * kRouterSlots;  // 64: the largest top_k

// One compare orders the selection: the key's fp64 order in the high word (-0 made +0 first, as the
// two zeros are equal), the lower expert id first among equal keys in the low word. Every expert's
// key is above the zero key, the filler of lists with fewer than kRouterList experts.
struct RouterKey {  // trivial, so that it can live in shared memory; {} is the zero key
  unsigned long long hi, lo;
};
__device__ __forceinline__ bool operator>(const RouterKey& a, const RouterKey& b) {
  return a.hi > b.hi || (a.hi == b.hi && a.lo > b.lo);
}
__device__ __forceinline__ bool operator<(const RouterKey& a, const RouterKey& b) { return b > a; }
__device__ __forceinline__ RouterKey shfl_xor(const RouterKey& k, int m) {
  return RouterKey{__shfl_xor_sync(0xffffffffu, k.hi, m), __shfl_xor_sync(0xffffffffu, k.lo, m)};
}
__device__ __forceinline__ RouterKey router_key(double key, int e) {
  const unsigned long long b = static_cast<unsigned long long>(__double_as_longlong(key + 0.0));
  const unsigned long long sign = 1ull << 63;
  return RouterKey{(b & sign) ? ~b : (b | sign), 0xffffffffull - static_cast<unsigned long long>(uint32_t(e))};
}
__device__ __forceinline__ uint32_t key_id(const RouterKey& k) { return uint32_t(0xffffffffull - k.lo); }

// One compare-exchange stage of a bitonic network over a warp's list (element r * 32 + lane in
// v[r]) with its partner i ^ j: blocks of `size` alternate direction, the whole list ends
// descending (ascending when `ascending`).
__device__ __forceinline__ void bitonic_stage(RouterKey (&v)[kRouterSlots], int size, int j, bool ascending) {
  const int lane = threadIdx.x & 31;
  RouterKey old[kRouterSlots];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) old[r] = v[r];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) {
    const RouterKey other = j >= 32 ? old[r ^ (j >> 5)] : shfl_xor(old[r], j);
    const int i = r * 32 + lane;
    const bool take_max = (((i & size) == 0) == ((i & j) == 0)) != ascending;
    v[r] = take_max ? (old[r] > other ? old[r] : other) : (old[r] < other ? old[r] : other);
  }
}

__device__ __forceinline__ void bitonic_sort(RouterKey (&v)[kRouterSlots], bool ascending) {
#pragma unroll
  for (int size = 2; size <= kRouterList; size <<= 1)
#pragma unroll
    for (int j = size >> 1; j > 0; j >>= 1) bitonic_stage(v, size, j, ascending);
}

// best (descending) becomes the top kRouterList of best and up (ascending), descending: the
// elementwise maximum of the two holds exactly those and is bitonic, so one merge sorts it.
__device__ __forceinline__ void bitonic_keep_top(RouterKey (&best)[kRouterSlots], const RouterKey (&up)[kRouterSlots]) {
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) best[r] = best[r] > up[r] ? best[r] : up[r];
#pragma unroll
  for (int j = kRouterList >> 1; j > 0; j >>= 1) bitonic_stage(best, kRouterList, j, false);
}

__global__ void __launch_bounds__(kRouterThreads)
    router_kernel(const double* logits, const float* bias, int E, int k, bool renorm, double scaling, int32_t* ids,
                  double* wts) {
  pdl_enter();
  extern __shared__ double s[];  // [E]
  __shared__ RouterKey lists[kRouterWarps][kRouterList];
  __shared__ double chosen_s[kRouterList];  // the chosen scores in ascending id order
  const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  RouterKey best[kRouterSlots] = {};
  for (int base = 0; base < E; base += kRouterThreads * kRouterSlots) {
    RouterKey v[kRouterSlots];
#pragma unroll
    for (int r = 0; r < kRouterSlots; ++r) {
      const int e = base + r * kRouterThreads + threadIdx.x;
      v[r] = RouterKey{};
      if (e < E) {
        s[e] = sigm(logits[int64_t(t) * E + e]);
        v[r] = router_key(s[e] + (bias ? static_cast<double>(bias[e]) : 0.0), e);
      }
    }
    bitonic_sort(v, base != 0);
    if (base == 0) {
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) best[r] = v[r];
    } else {
      bitonic_keep_top(best, v);
    }
  }
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) lists[warp][r * 32 + lane] = best[r];
  __syncthreads();  // also publishes s
  for (int step = 1; step < kRouterWarps; step <<= 1) {
    if (warp % (2 * step) == 0) {
      RouterKey up[kRouterSlots];
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) up[r] = lists[warp + step][kRouterList - 1 - (r * 32 + lane)];
      bitonic_keep_top(best, up);
#pragma unroll
      for (int r = 0; r < kRouterSlots; ++r) lists[warp][r * 32 + lane] = best[r];
    }
    __syncthreads();
  }
  if (warp != 0) return;
  // The first k of warp 0's list are the chosen experts; each one's place in ascending id order is
  // the number of chosen ids below its own.
  uint32_t id[kRouterSlots];
  int rank[kRouterSlots];
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r) {
    id[r] = key_id(best[r]);
    rank[r] = 0;
  }
#pragma unroll
  for (int r2 = 0; r2 < kRouterSlots; ++r2)
    for (int src = 0; src < 32; ++src) {
      const uint32_t other = __shfl_sync(0xffffffffu, id[r2], src);
      if (r2 * 32 + src < k) {
#pragma unroll
        for (int r = 0; r < kRouterSlots; ++r) rank[r] += other < id[r] ? 1 : 0;
      }
    }
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r)
    if (r * 32 + lane < k) {
      chosen_s[rank[r]] = s[id[r]];
      ids[t * k + rank[r]] = int32_t(id[r]);
    }
  __syncwarp();
  double sum = 0.0;
  for (int i = 0; i < k; ++i) sum += chosen_s[i];  // ascending expert id: the fixed summation order
#pragma unroll
  for (int r = 0; r < kRouterSlots; ++r)
    if (r * 32 + lane < k) {
      const double sc = s[id[r]];
      wts[t * k + rank[r]] = (renorm ? sc / (sum + 1e-20) : sc) * scaling;
    }
}

}  // namespace

void router_select(const double* logits, const float* bias, int T, int E, int k, bool renormalize, double scaling,
                   int32_t* ids, double* weights, Stream s) {
  if (T <= 0) return;
  if (k < 1 || k > 64 || k > E) throw CudaError("router_select: top_k must be 1..64 and at most the expert count");
  // The static lists take 8 KB of the 48 KB a block gets without opting in.
  if (size_t(E) * sizeof(double) > 40 * 1024) throw CudaError("router_select: too many experts for shared memory");
  DELTAFIN_CUDA_CHECK(launch(router_kernel, T, kRouterThreads, size_t(E) * sizeof(double), as_stream(s), logits, bias,
                             E, k, renormalize, scaling, ids, weights));
}

}  // namespace deltafin::cuda::k3
