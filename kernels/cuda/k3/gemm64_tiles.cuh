#pragma once
// The fp64 GEMV's building blocks (k3/gemm.cu's comment says how they fit together), shared by the
// product kernel and the lab's variants of it (kernels/cuda/lab/gemm64_lab.cuh): the fp64 MMA, the
// exact widening of 8 weights, and the loads of 8 activations.
#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::k3::gemm64 {

__device__ __forceinline__ void dmma(double& d0, double& d1, double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
}

template <typename W>
struct Chunk8;
template <>
struct Chunk8<uint16_t> {  // 8 BF16 weights
  static constexpr double kXScale = 0x1p769, kYScale = 0x1p127;
  uint4 q;
  __device__ __forceinline__ void load(const uint16_t* row, int64_t k, int64_t in, bool vec, bool live) {
    if (live && vec && k + 8 <= in) {
      q = __ldg(reinterpret_cast<const uint4*>(row + k));
      return;
    }
    uint32_t h[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) h[e] = live && k + e < in ? row[k + e] : 0u;
    q = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
  }
  // Weight s (0..7; a constant once unrolled) times 2^-896.
  __device__ __forceinline__ double at(int s) const {
    const uint32_t u = s < 2 ? q.x : s < 4 ? q.y : s < 6 ? q.z : q.w;
    const uint32_t hi = s % 2 == 0 ? ((u << 13) & 0x0fffe000u) | ((u << 16) & 0x80000000u)
                                   : ((u >> 3) & 0x0fffe000u) | (u & 0x80000000u);
    return __hiloint2double(static_cast<int>(hi), 0);
  }
};
template <>
struct Chunk8<float> {  // 8 fp32 weights, widened as they are
  static constexpr double kXScale = 1.0, kYScale = 1.0;
  float4 a, b;
  __device__ __forceinline__ void load(const float* row, int64_t k, int64_t in, bool vec, bool live) {
    if (live && vec && k + 8 <= in) {
      a = __ldg(reinterpret_cast<const float4*>(row + k));
      b = __ldg(reinterpret_cast<const float4*>(row + k) + 1);
      return;
    }
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = live && k + e < in ? row[k + e] : 0.0f;
    a = make_float4(v[0], v[1], v[2], v[3]);
    b = make_float4(v[4], v[5], v[6], v[7]);
  }
  __device__ __forceinline__ double at(int s) const {
    const float4& h = s < 4 ? a : b;
    const int i = s % 4;
    return static_cast<double>(i == 0 ? h.x : i == 1 ? h.y : i == 2 ? h.z : h.w);
  }
};

// The activations xr[k .. k+7] of one row times `scale` (zeros past the width and for a dead row),
// two per 16-byte load when xvec says x and its row stride are 16-byte aligned (k is a multiple of 8).
__device__ __forceinline__ void load_x8(double (&v)[8], const double* __restrict__ xr, int64_t k, int64_t in, bool xvec,
                                        bool live, double scale) {
  if (live && xvec && k + 8 <= in) {
#pragma unroll
    for (int s = 0; s < 8; s += 2) {
      const double2 p = __ldg(reinterpret_cast<const double2*>(xr + k + s));
      v[s] = p.x * scale;
      v[s + 1] = p.y * scale;
    }
    return;
  }
#pragma unroll
  for (int s = 0; s < 8; ++s) v[s] = live && k + s < in ? __ldg(xr + k + s) * scale : 0.0;
}

}  // namespace deltafin::cuda::k3::gemm64
