#include "cuda/gpu_rates.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/cuda_support.h"

namespace deltafin::cuda {

std::vector<GpuMemory> gpu_memory() {
  std::vector<GpuMemory> out;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return out;
  }
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    check_cuda(cudaSetDevice(d), "cudaSetDevice");
    size_t free_b = 0, total_b = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    out.push_back(GpuMemory{"GPU " + std::to_string(d) + " (" + prop.name + ")", free_b, total_b});
  }
  check_cuda(cudaSetDevice(current), "cudaSetDevice");
  return out;
}

void probe_gpu_rates(int device, double& h2d_gbps, double& hbm_gbps) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  const size_t n = 512ull << 20;
  void* host = nullptr;
  void *a = nullptr, *b = nullptr;
  check_cuda(cudaMallocHost(&host, n), "cudaMallocHost (bandwidth probe)");
  try {
    check_cuda(cudaMalloc(&a, n), "cudaMalloc (bandwidth probe)");
    check_cuda(cudaMalloc(&b, n), "cudaMalloc (bandwidth probe)");
    OwnedStream s;
    OwnedEvent t0(true), t1(true);
    auto best_ms = [&](auto&& issue) {
      float best = 1e30f;
      for (int r = 0; r < 3; ++r) {
        t0.record(s.get());
        issue();
        t1.record(s.get());
        s.sync();
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, t0.get(), t1.get()), "cudaEventElapsedTime");
        best = std::min(best, ms);
      }
      return best;
    };
    const float h2d = best_ms([&] { check_cuda(cudaMemcpyAsync(a, host, n, cudaMemcpyHostToDevice, s.get()), "cudaMemcpyAsync"); });
    const float d2d = best_ms([&] { check_cuda(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s.get()), "cudaMemcpyAsync"); });
    h2d_gbps = n / (h2d * 1e-3) / 1e9;
    hbm_gbps = 2.0 * n / (d2d * 1e-3) / 1e9;
  } catch (...) {
    cudaFree(a);
    cudaFree(b);
    cudaFreeHost(host);
    throw;
  }
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(host);
}

}  // namespace deltafin::cuda
