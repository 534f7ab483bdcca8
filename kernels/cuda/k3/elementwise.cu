// Elementwise ops of the K3 forward: copies, sums, the sigmoid gate and the SiTU GLU over rows.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

__global__ void copy_kernel(const double* a, double* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i];
}
__global__ void add_kernel(const double* a, const double* b, double* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] + b[i];
}
__global__ void add_sum_kernel(const double* a, const double* b, const double* c, double* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] + (b[i] + c[i]);
}
__global__ void mul_sigmoid_kernel(const double* a, const double* g, double* o, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = a[i] * sigm(g[i]);
}
__device__ __forceinline__ double situ_glu_at(double g, double u, double beta, double lbeta) {
  const double a = beta * tanh(g / beta) * sigm(g);
  const double b = lbeta * tanh(u / lbeta);
  return a * b;
}
__global__ void situ_rows_kernel(const double* gu, int64_t n, int64_t total, double beta, double lbeta, double* o) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / n, c = i % n;
    o[i] = situ_glu_at(gu[t * 2 * n + c], gu[t * 2 * n + n + c], beta, lbeta);
  }
}

}  // namespace

void copy(const double* src, double* dst, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(copy_kernel, grid_1d(n), 256, 0, as_stream(s), src, dst, n));
}

void add(const double* a, const double* b, double* out, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(add_kernel, grid_1d(n), 256, 0, as_stream(s), a, b, out, n));
}

void add_sum(const double* a, const double* b, const double* c, double* out, int64_t n, Stream s) {
  if (n <= 0) return;
  if (!c) return add(a, b, out, n, s);
  DELTAFIN_CUDA_CHECK(launch(add_sum_kernel, grid_1d(n), 256, 0, as_stream(s), a, b, c, out, n));
}

void mul_sigmoid(const double* a, const double* g, double* out, int64_t n, Stream s) {
  if (n <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(mul_sigmoid_kernel, grid_1d(n), 256, 0, as_stream(s), a, g, out, n));
}

void situ_glu_rows(const double* gu, int T, int64_t n, double beta, double lbeta, double* out, Stream s) {
  if (T <= 0 || n <= 0) return;
  const int64_t total = int64_t(T) * n;
  DELTAFIN_CUDA_CHECK(launch(situ_rows_kernel, grid_1d(total), 256, 0, as_stream(s), gu, n, total, beta, lbeta, out));
}

}  // namespace deltafin::cuda::k3
