#pragma once
// The fp64 routed experts' building blocks (k3/experts.cu's comment says how they fit together),
// shared by the product kernels and the lab's variants of them (kernels/cuda/lab/experts64_lab.cuh):
// the staged activation layout, the code loads and their exact decoding, the block scales, the
// grouping of pairs by expert, SiTU, and the stage and combine loops. One copy, so that a lab variant
// that keeps the product's order computes the product's bits by construction.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/cuda_common.cuh"
#include "cuda/k3/k3_common.cuh"
#include "cuda/k3/mxfp4_fp64.h"

namespace deltafin::cuda::k3::experts64 {

// 2^e for -1022 <= e <= 1023.
__device__ __forceinline__ double pow2(int e) { return __hiloint2double((e + 1023) << 20, 0); }
__device__ __forceinline__ double block_scale(uint32_t s) {
  return s == 255 ? __longlong_as_double(0x7ff0000000000000ll) : pow2(e8m0_block_exponent(s));
}

// Where column c of an n-column activation row sits in its staged copy: as 16-byte pairs, pair p of
// half-block b (columns 16b + 2p, 16b + 2p + 1) at p * (n / 16) + b, so that the lanes of a warp, which
// take consecutive half-blocks, read consecutive 16-byte slots.
__host__ __device__ __forceinline__ int64_t staged_pos(int64_t c, int n) {
  return (((c & 15) >> 1) * (n / 16) + (c >> 4)) * 2 + (c & 1);
}

// 8 bytes of weight codes, read once: the nc path without keeping them in L1 (the staged activations
// live there).
__device__ __forceinline__ uint2 load_codes(const uint2* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

__device__ __forceinline__ double code_double(const E2m1Planes& p, int n) {
  return __hiloint2double(static_cast<int>(e2m1_high_word(p, n)), 0);
}

// The pairs a block computes: pair a (blockIdx.y) leads a group when the pairs before it with its
// expert number a multiple of G; its group is it and the next pairs with its expert, up to G in pair
// order. Returns the group's size, 0 for a pair that some other block computes. By one warp, every
// lane the same answer.
template <int G>
__device__ __forceinline__ int group_of(const int32_t* slot, int P, int a, int (&member)[G]) {
  const int lane = threadIdx.x & 31, e = slot[a];
  int before = 0;
  for (int b = 0; b < a; b += 32) {
    const int i = b + lane;
    before += __popc(__ballot_sync(0xffffffffu, i < a && slot[i] == e));
  }
  if (before % G) return 0;
  int n = 1;
  member[0] = a;
  for (int b = a + 1; b < P && n < G; b += 32) {
    const int i = b + lane;
    unsigned same = __ballot_sync(0xffffffffu, i < P && slot[i] == e);
    for (; same && n < G; same &= same - 1) member[n++] = b + __ffs(int(same)) - 1;
  }
  return n;
}

// SiTU of one gate and up sum (situ.h's betas), before staging.
__device__ __forceinline__ double situ_glu(double gv, double uv) {
  const double act = kSituBeta * tanh(gv / kSituBeta) * sigm(gv);
  return act * (kSituLinearBeta * tanh(uv / kSituLinearBeta));
}

// The stage kernel's loop: z[t] * 2^kMxStageExp at staged_pos, for `rows` rows of Z.
__device__ __forceinline__ void stage_rows(const double* __restrict__ z, int rows, int Z, double* __restrict__ zs) {
  const double up = pow2(kMxStageExp);
  const int64_t n = int64_t(rows) * Z;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / Z, c = i % Z;
    zs[t * Z + staged_pos(c, Z)] = z[i] * up;
  }
}

// The combine kernel's loop: y[t][r] = sum over slots j in order of wt[t * k + j] * d[t * k + j][r].
__device__ __forceinline__ void combine_rows(const double* __restrict__ d, const double* __restrict__ wt, int rows,
                                             int k, int Z, double* __restrict__ y) {
  const int64_t n = int64_t(rows) * Z;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / Z, r = i % Z;
    double acc = 0.0;
    for (int j = 0; j < k; ++j) acc = __fma_rn(wt[t * k + j], d[(t * k + j) * Z + r], acc);
    y[i] = acc;
  }
}

// Blocks per pair group for a matrix of `groups` row groups (at one pair a group), with `warps` warps a
// block: enough to fill the GPU `fill` blocks an SM deep when there are few pairs, at least one row
// group a warp and at most eight (short blocks keep the last wave small when many groups run).
inline unsigned blocks_per_group(int warps, int fill, int groups, int pairs) {
  static const int sms = [] {
    int dev = 0, n = 132;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      n = 132;
    return n;
  }();
  const int blocks = (fill * sms + pairs - 1) / pairs;
  const int lo = (groups + warps * 8 - 1) / (warps * 8), hi = (groups + warps - 1) / warps;
  return unsigned(std::clamp(blocks, std::max(1, lo), std::max(1, hi)));
}

}  // namespace deltafin::cuda::k3::experts64
