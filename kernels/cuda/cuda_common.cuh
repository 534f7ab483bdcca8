#pragma once
// Shared device helpers for the CUDA kernels (included by .cu files only).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_kernels.h"
#include "cuda/pdl.cuh"
#include "cuda/situ.h"

namespace deltafin::cuda {

[[noreturn]] void throw_cuda(cudaError_t err, const char* what, const char* file, int line);

#define DELTAFIN_CUDA_CHECK(expr)                                                                             \
  do {                                                                                                        \
    cudaError_t deltafin_err_ = (expr);                                                                       \
    if (deltafin_err_ != cudaSuccess) ::deltafin::cuda::throw_cuda(deltafin_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a launch: configuration errors surface here, faults at the next synchronizing call.
#define DELTAFIN_CUDA_LAUNCHED(name) DELTAFIN_CUDA_CHECK(cudaGetLastError())

inline cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

// Butterfly sum over a warp: the same fixed tree for every call, and every lane gets the total
// (fp32 for the library's kernels, fp64 for the K3 forward's).
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// Sum over a block of NT threads: warp butterflies, then warp totals in warp order (the same
// tree for every call). `sh` holds NT/32 values; every thread gets the total, and `sh` may be
// reused as soon as it returns.
template <int NT, typename T>
__device__ __forceinline__ T block_sum(T v, T* sh) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  T t = 0;
#pragma unroll
  for (int k = 0; k < NT / 32; ++k) t += sh[k];
  __syncthreads();
  return t;
}

// Maximum over a block of NT threads, every thread gets it; `sh` as for block_sum.
template <int NT, typename T>
__device__ __forceinline__ T block_max(T v, T* sh) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, m));
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  T t = sh[0];
#pragma unroll
  for (int k = 1; k < NT / 32; ++k) t = max(t, sh[k]);
  __syncthreads();
  return t;
}

// Element i of a weight vector stored as BF16 (bf16 true) or fp32.
__device__ __forceinline__ float load_weight(const void* w, bool bf16, int64_t i) {
  if (bf16) return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16);
  return static_cast<const float*>(w)[i];
}

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// K3's SiTU GLU activation (situ.h's betas) with accurate (not fast-math) tanh and exp; the
// divisions by the betas are multiplications by their fp32 reciprocals (0.25 exact, 1/25 rounded).
__device__ __forceinline__ float situ_act(float g, float u) {
  constexpr float kInvBeta = 1.0f / kSituBeta, kInvLinearBeta = 1.0f / kSituLinearBeta;
  static_assert(kInvBeta == 0.25f && kInvLinearBeta == 0.04f, "the multipliers these kernels were measured with");
  const float sig = 1.0f / (1.0f + expf(-g));
  return (kSituBeta * tanhf(g * kInvBeta) * sig) * (kSituLinearBeta * tanhf(u * kInvLinearBeta));
}

}  // namespace deltafin::cuda
