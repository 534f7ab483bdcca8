// The routed experts of a K3 MoE layer in fp64: MXFP4 rows decoded exactly, fp64 activations.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

// An E2M1 code as an fp64 without a table: its three magnitude bits (e1 e0 m) placed as the lowest
// two exponent bits and the top mantissa bit of a double are the code's value times 2^-1022 exactly,
// the codes with e = 0 (0 and 0.5) landing on the subnormals 0 and 2^-1023 as E2M1's own subnormals
// do. So a code costs two shifts and a merge (the sign to bit 63), and the activations it multiplies
// are staged times 2^960, which keeps every product a normal number (for activations between 2^-900
// and 2^64) and every sum exact up to the same roundings as unscaled fp64. The block's E8M0 scale
// times 2^62 takes the 2^(960 - 1022) back out; all of it is powers of two.
constexpr int kStageExp = 960;
__device__ __forceinline__ double pow2(int e) {  // 2^e for -1022 <= e <= 1023
  return __hiloint2double((e + 1023) << 20, 0);
}
// Nibble n (0..7) of a 32-bit word of packed codes (low nibble = even column), as above.
template <int n>
__device__ __forceinline__ double code_at(uint32_t w) {
  constexpr int kMag = 19 - 4 * n;  // magnitude bits 4n..4n+2 -> bits 19..21 of the high word
  const uint32_t mag = (kMag >= 0 ? w << (kMag >= 0 ? kMag : 0) : w >> (kMag < 0 ? -kMag : 0)) & 0x00380000u;
  const uint32_t sign = (w << (28 - 4 * n)) & 0x80000000u;  // bit 4n+3 -> bit 31
  return __hiloint2double(static_cast<int>(mag | sign), 0);
}
// 2^(s-127) * 2^(1022-960): an E8M0 byte times the factor the staged activations and the codes
// left; s = 255 (no number in E8M0) gives infinity, as the CPU's table.
__device__ __forceinline__ double block_scale(uint32_t s) {
  return s == 255 ? __longlong_as_double(0x7ff0000000000000ll) : pow2(int(s) - 127 + 1022 - kStageExp);
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
  const double up = pow2(kStageExp);
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

int64_t routed_experts_scratch(int T, int k, int latent, int inter) {
  (void)latent;
  return int64_t(T) * k * inter;
}

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
