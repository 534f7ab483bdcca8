// BF16 weights x fp32 rows on tensor cores, fp32 accumulation, batch invariant by construction: versions v10..v12,
// checked against the CPU reference and themselves (v1 FFMA, the versions without the L2 hint: lab/bf16_gemm_lab.cu).
// x is split exactly into three bf16 parts, so the error is an fp32 dot product's. The work layout, the K order and
// why nothing depends on T: docs/CUDA.md "How the kernels compute", "BF16 GEMM".
#include <cooperative_groups.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

// ---- v10..v12: tensor cores --------------------------------------------------------------------

// Eight fp32 values -> three bf16 parts each, as mma B registers f[part][j] = (v[2j], v[2j+1]) (low half = lower k).
// Each part truncates what the previous parts left, every remainder is exact, so p1 + p2 + p3 == x (the proof, why
// truncation: docs/CUDA.md "BF16 GEMM"). An infinite x keeps its infinity in p1 with zero remainders (+-inf as in
// the reference, not NaN). Limit: for |x| below about 2^-110 the remainders are subnormal and p3 may lose bits.
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

// Weight loads: read once, so they should not displace x or other data in L1/L2 (L1::no_allocate); the L2::256B
// prefetch-size hint lets the next k32-steps of the same rows find their bytes in L2 (docs/CUDA.md "BF16 GEMM").
__device__ __forceinline__ uint4 load_w(const uint4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
#else
  return __ldcs(p);
#endif
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// A block (or a cluster of CL blocks) owns MT m16 tiles of weight rows over the whole width; its W * CL warps take
// k32-steps in groups of U: warp v (= rank * W + warp) the groups v, v + W*CL, ... The warps' partial sums are
// added in warp order, then in block-rank order: a K order that depends on `in` only (docs/CUDA.md "BF16 GEMM").
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
  // Prologue, before waiting for the kernel ahead (pdl.cuh): the weights never change during a pass, so the chunks
  // this lane loads in its first kPrefetchSteps k-step groups are asked into L2 while that kernel finishes. Loads
  // only: every value and sum is the same.
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
          for (int h = 0; h < 2; ++h) wa[u][m][h] = ok && rok[m][h] ? load_w(wr[m][h] + q) : make_uint4(0, 0, 0, 0);
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

struct DeviceCaps {
  int cc_major = 0;
};
const DeviceCaps& caps() {
  static const DeviceCaps c = [] {
    DeviceCaps d;
    int dev = 0;
    DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
    return d;
  }();
  return c;
}

using Version = Bf16GemmVersion;

// The product's versions, then any registered (add_bf16_gemm_versions), in number order.
std::vector<Version>& versions() {
  static std::vector<Version> v = {
      {10, "v2 + L2::256B prefetch hint", 8, launch_mma<2, 8, 2, 1>},
      {11, "v3 + L2::256B prefetch hint", 8, launch_mma<1, 8, 4, 1>},
      {12, "v5 + L2::256B prefetch hint", 9, launch_mma<1, 8, 2, 4>},
  };
  return v;
}

const Version* find_version(int number) {
  for (const Version& v : versions())
    if (v.number == number) return &v;
  return nullptr;
}

void check_args(const char* who, const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T) {
  if (out <= 0 || in <= 0 || T < 0)
    throw CudaError(std::string(who) + ": out and in must be positive and T non-negative");
  if (in % 8 != 0 || reinterpret_cast<uintptr_t>(dev_w) % 16 != 0)
    throw CudaError(std::string(who) + ": the input width (" + std::to_string(in) +
                    ") must be a multiple of 8 and the weights 16-byte aligned");
  if (ldx % 4 != 0 || reinterpret_cast<uintptr_t>(dev_x) % 16 != 0)
    throw CudaError(std::string(who) + ": x rows must be 16-byte aligned (ldx a multiple of 4)");
}

}  // namespace

void add_bf16_gemm_versions(const Bf16GemmVersion* add, int count) {
  std::vector<Version>& all = versions();
  for (int i = 0; i < count; ++i)
    if (!find_version(add[i].number)) all.push_back(add[i]);
  std::sort(all.begin(), all.end(), [](const Version& a, const Version& b) { return a.number < b.number; });
}

std::vector<int> bf16_gemm_versions() {
  std::vector<int> v;
  for (const Version& k : versions())
    if (caps().cc_major >= k.min_cc_major) v.push_back(k.number);
  return v;
}

std::string bf16_gemm_version_name(int version) {
  const Version* v = find_version(version);
  if (!v) throw CudaError("bf16_gemm: no version " + std::to_string(version));
  return "v" + std::to_string(v->number) + " (" + v->what + ")";
}

int bf16_gemm_default_version(int64_t out, int64_t in) {
  (void)in;
  // DELTAFIN_CUDA_GEMM_VERSIONS=W,M,N (measurements only): version W for matrices of 4096 rows or
  // more, M from 1024 rows, N below. Still a choice by shape only.
  static const std::array<int, 3> forced = [] {
    std::array<int, 3> f{0, 0, 0};
    if (const char* e = std::getenv("DELTAFIN_CUDA_GEMM_VERSIONS")) {
      if (std::sscanf(e, "%d,%d,%d", &f[0], &f[1], &f[2]) != 3) f = {0, 0, 0};
      for (const int v : f) {
        const Version* k = find_version(v);
        if (!k || caps().cc_major < k->min_cc_major) f = {0, 0, 0};
      }
    }
    return f;
  }();
  const int cls = out >= 4096 ? 0 : out >= 1024 ? 1 : 2;
  if (forced[0]) return forced[cls];
  const int cc = caps().cc_major;
  // By rows (why: docs/CUDA.md "BF16 GEMM"): 32-row tiles from 4096 rows; 16-row tiles from 1024; below that a
  // cluster of four blocks.
  if (cls == 0) return 10;
  if (cls == 1 || cc < 9) return 11;
  return 12;
}

void bf16_gemm_version(int version, const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T,
                       float* dev_y, int64_t ldy, Stream stream) {
  check_args("bf16_gemm", dev_w, out, in, dev_x, ldx, T);
  const Version* v = find_version(version);
  if (!v || caps().cc_major < v->min_cc_major)
    throw CudaError("bf16_gemm: version " + std::to_string(version) + " is not available on this device");
  if (T == 0) return;
  v->run(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, stream);
}

void bf16_gemm(const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T, float* dev_y,
               int64_t ldy, Stream stream) {
  check_args("bf16_gemm", dev_w, out, in, dev_x, ldx, T);
  if (T == 0) return;
  find_version(bf16_gemm_default_version(out, in))->run(dev_w, out, in, dev_x, ldx, T, dev_y, ldy, stream);
}

}  // namespace deltafin::cuda
