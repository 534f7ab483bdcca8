// The routed experts of a K3 MoE layer in fp64: MXFP4 rows decoded exactly, fp64 activations.
#include "cuda/k3/k3_common.cuh"
#include "cuda/k3/mxfp4_fp64.h"

namespace deltafin::cuda::k3 {
namespace {

// MXFP4 codes as doubles by shifts, activations staged times 2^kMxStageExp (mxfp4_fp64.h says why
// this is exact).
__device__ __forceinline__ double pow2(int e) {  // 2^e for -1022 <= e <= 1023
  return __hiloint2double((e + 1023) << 20, 0);
}
template <int n>
__device__ __forceinline__ double code_at(uint32_t w) {
  return __hiloint2double(static_cast<int>(e2m1_high_word(w, n)), 0);
}
__device__ __forceinline__ double block_scale(uint32_t s) {
  return s == 255 ? __longlong_as_double(0x7ff0000000000000ll) : pow2(e8m0_block_exponent(s));
}

// One 32-column block of an MXFP4 row (16 bytes of codes) against staged activations xs (transposed:
// column c of block b at xs[c * nb + b]), summed in column order.
__device__ __forceinline__ double block_dot(const uint4 q, const double* xs, int nb, int b) {
  const uint32_t w[4] = {q.x, q.y, q.z, q.w};
  double a = 0.0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const double* x = xs + (i * 8) * nb + b;
    a = __fma_rn(code_at<0>(w[i]), x[0 * nb], a);
    a = __fma_rn(code_at<1>(w[i]), x[1 * nb], a);
    a = __fma_rn(code_at<2>(w[i]), x[2 * nb], a);
    a = __fma_rn(code_at<3>(w[i]), x[3 * nb], a);
    a = __fma_rn(code_at<4>(w[i]), x[4 * nb], a);
    a = __fma_rn(code_at<5>(w[i]), x[5 * nb], a);
    a = __fma_rn(code_at<6>(w[i]), x[6 * nb], a);
    a = __fma_rn(code_at<7>(w[i]), x[7 * nb], a);
  }
  return a;
}

// xs[c * nb + b] = x[b * 32 + c] * 2^960 for the n = nb * 32 values of one activation row.
__device__ __forceinline__ void stage_row(const double* x, int n, double* xs) {
  const int nb = n / 32;
  const double up = pow2(kMxStageExp);
  for (int i = threadIdx.x; i < n; i += blockDim.x) xs[(i % 32) * nb + i / 32] = x[i] * up;
}

// Row r of an MXFP4 matrix [rows][n] against staged xs, by one warp: lane l sums blocks l, l + 32,
// ... in order (each block's sum times its scale), then the warp's butterfly; every lane gets it.
__device__ __forceinline__ double row_dot(const uint8_t* packed, const uint8_t* scale, int64_t r, int n,
                                          const double* xs) {
  const int nb = n / 32, lane = threadIdx.x & 31;
  const uint4* row = reinterpret_cast<const uint4*>(packed + r * (n / 2));
  const uint8_t* sr = scale + r * nb;
  double acc = 0.0;
  for (int b = lane; b < nb; b += 32)
    acc = __fma_rn(block_dot(__ldg(row + b), xs, nb, b), block_scale(__ldg(sr + b)), acc);
  return warp_sum(acc);
}

constexpr int kWarps = 8;
constexpr int kUpRowsPerWarp = 4;    // gate/up rows a warp takes in turn (amortizes the staging)
constexpr int kDownRowsPerWarp = 2;  // down rows a warp takes in turn

// Per (row t, slot j) = blockIdx.y and kWarps * kUpRowsPerWarp intermediate rows i: the expert's
// gate and up rows against z[t], then SiTU: h[t * k + j][i].
__global__ void __launch_bounds__(kWarps * 32)
    expert_up_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot, int k, int Z, int I,
                     const double* __restrict__ z, double* __restrict__ h) {
  pdl_enter();
  extern __shared__ double xs[];  // [Z], transposed by block
  const int a = blockIdx.y, t = a / k;
  const MxExpert e = table[slot[a]];
  stage_row(z + int64_t(t) * Z, Z, xs);
  __syncthreads();
  const int warp = threadIdx.x >> 5;
  for (int q = 0; q < kUpRowsPerWarp; ++q) {
    const int64_t i = (int64_t(blockIdx.x) * kWarps + warp) * kUpRowsPerWarp + q;
    if (i >= I) break;
    const double g =
        row_dot(static_cast<const uint8_t*>(e.gate_packed), static_cast<const uint8_t*>(e.gate_scale), i, Z, xs);
    const double u =
        row_dot(static_cast<const uint8_t*>(e.up_packed), static_cast<const uint8_t*>(e.up_scale), i, Z, xs);
    if ((threadIdx.x & 31) == 0) {
      const double act = kSituBeta * tanh(g / kSituBeta) * sigm(g);
      h[int64_t(a) * I + i] = act * (kSituLinearBeta * tanh(u / kSituLinearBeta));
    }
  }
}

// Per row t = blockIdx.y and kWarps * kDownRowsPerWarp latent rows r: every slot's down row against
// its h, weighted and added in slot order: y[t][r].
__global__ void __launch_bounds__(kWarps * 32)
    expert_down_kernel(const MxExpert* __restrict__ table, const int32_t* __restrict__ slot,
                       const double* __restrict__ wt, int k, int Z, int I, const double* __restrict__ h,
                       double* __restrict__ y) {
  pdl_enter();
  extern __shared__ double xs[];  // [I], transposed by block
  const int t = blockIdx.y, warp = threadIdx.x >> 5;
  double acc[kDownRowsPerWarp] = {};
  for (int j = 0; j < k; ++j) {
    const int a = t * k + j;
    const MxExpert e = table[slot[a]];
    __syncthreads();  // the last slot's staged values are used up
    stage_row(h + int64_t(a) * I, I, xs);
    __syncthreads();
    const double wj = wt[a];
#pragma unroll
    for (int q = 0; q < kDownRowsPerWarp; ++q) {
      const int64_t r = (int64_t(blockIdx.x) * kWarps + warp) * kDownRowsPerWarp + q;
      if (r < Z)
        acc[q] = __fma_rn(
            wj,
            row_dot(static_cast<const uint8_t*>(e.down_packed), static_cast<const uint8_t*>(e.down_scale), r, I, xs),
            acc[q]);
    }
  }
  if ((threadIdx.x & 31) == 0)
#pragma unroll
    for (int q = 0; q < kDownRowsPerWarp; ++q) {
      const int64_t r = (int64_t(blockIdx.x) * kWarps + warp) * kDownRowsPerWarp + q;
      if (r < Z) y[int64_t(t) * Z + r] = acc[q];
    }
}

void opt_in_smem(const void* kernel, size_t bytes, size_t& opted) {
  if (bytes <= opted) return;
  DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  opted = bytes;
}

}  // namespace

int64_t routed_experts_scratch(int T, int k, int inter) { return int64_t(T) * k * inter; }

void routed_experts(const MxExpert* table, const int32_t* slot, const double* w, int T, int k, int latent, int inter,
                    const double* z, double* scratch, double* y, Stream s) {
  if (T <= 0) return;
  if (latent % 32 != 0 || inter % 32 != 0 || k < 1)
    throw CudaError("routed_experts: latent and inter must be multiples of 32, top_k at least 1");
  static size_t up_opted = 48 * 1024, down_opted = 48 * 1024;
  const size_t up_smem = size_t(latent) * sizeof(double), down_smem = size_t(inter) * sizeof(double);
  opt_in_smem(reinterpret_cast<const void*>(expert_up_kernel), up_smem, up_opted);
  opt_in_smem(reinterpret_cast<const void*>(expert_down_kernel), down_smem, down_opted);
  const int up_rows = kWarps * kUpRowsPerWarp, down_rows = kWarps * kDownRowsPerWarp;
  const dim3 up_grid((inter + up_rows - 1) / up_rows, unsigned(T) * unsigned(k));
  DELTAFIN_CUDA_CHECK(
      launch(expert_up_kernel, up_grid, kWarps * 32, up_smem, as_stream(s), table, slot, k, latent, inter, z, scratch));
  const dim3 down_grid((latent + down_rows - 1) / down_rows, unsigned(T));
  DELTAFIN_CUDA_CHECK(launch(expert_down_kernel, down_grid, kWarps * 32, down_smem, as_stream(s), table, slot, w, k,
                             latent, inter, static_cast<const double*>(scratch), y));
}

}  // namespace deltafin::cuda::k3
