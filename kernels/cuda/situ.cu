// Elementwise SiTU GLU activation (the expert kernel applies the same situ_act inline).
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

__global__ void situ_kernel(const float* __restrict__ g, const float* __restrict__ u, float* __restrict__ h, int64_t count) {
  pdl_enter();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    h[i] = situ_act(g[i], u[i]);
}

}  // namespace

void situ(const float* dev_g, const float* dev_u, float* dev_h, int64_t count, Stream stream) {
  if (count < 0) throw CudaError("situ: count must be non-negative");
  if (count == 0) return;
  const int64_t blocks = (count + 255) / 256;
  DELTAFIN_CUDA_CHECK(launch(situ_kernel, static_cast<int>(blocks < 65536 ? blocks : 65536), 256, 0, as_stream(stream), dev_g, dev_u, dev_h, count));
}

}  // namespace deltafin::cuda
