#include "cuda/gpu_rates.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/cuda_support.h"
#include "cuda/k3/k3_ops.h"
#include "placement/machine_budget.h"

namespace deltafin::cuda {

std::vector<int> logical_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return {};
  }
  const char* e = std::getenv("DELTAFIN_CUDA_DEVICES");
  if (n == 0) return {};
  return placement::parse_device_list(e ? e : "", n);
}

std::vector<GpuMemory> gpu_memory() {
  std::vector<GpuMemory> out;
  const std::vector<int> devs = logical_devices();
  if (devs.empty()) return out;
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  for (size_t i = 0; i < devs.size(); ++i) {
    const int d = devs[i];
    const auto sharing = std::count(devs.begin(), devs.end(), d);
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    check_cuda(cudaSetDevice(d), "cudaSetDevice");
    size_t free_b = 0, total_b = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    std::string name = "GPU " + std::to_string(i) + " (" + prop.name;
    if (sharing > 1 || d != int(i)) name += ", device " + std::to_string(d) + (sharing > 1 ? ", shared" : "");
    out.push_back(GpuMemory{name + ")", free_b / uint64_t(sharing), total_b / uint64_t(sharing)});
  }
  check_cuda(cudaSetDevice(current), "cudaSetDevice");
  return out;
}

uint64_t device_free_bytes(int device) {
  DeviceScope on(device);
  size_t free_b = 0, total_b = 0;
  check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return free_b;
}

void probe_gpu_rates(int device, double& h2d_gbps, double& hbm_gbps, double& gemm_tflops) {
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
    const float h2d =
        best_ms([&] { check_cuda(cudaMemcpyAsync(a, host, n, cudaMemcpyHostToDevice, s.get()), "cudaMemcpyAsync"); });
    const float d2d =
        best_ms([&] { check_cuda(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s.get()), "cudaMemcpyAsync"); });
    h2d_gbps = n / (h2d * 1e-3) / 1e9;
    hbm_gbps = 2.0 * n / (d2d * 1e-3) / 1e9;
    // The forward's GEMV at a prefill pass's 16 rows. The weights are finite BF16 bits of varied
    // sign and magnitude (their values do not change the fp64 units' time), staged in the pinned
    // buffer; the activations are the buffer's first bytes read as doubles, made finite.
    constexpr int64_t kDim = 7168;
    constexpr int kRows = 16, kLaunches = 8;
    uint16_t* bits = static_cast<uint16_t*>(host);
    for (int64_t i = 0; i < kDim * kDim; ++i)
      bits[i] = uint16_t(0x3c00u + ((uint32_t(i) * 2654435761u) >> 20 & 0x7ffu) + (i & 1 ? 0x8000u : 0u));
    check_cuda(cudaMemcpyAsync(a, host, size_t(kDim * kDim) * 2, cudaMemcpyHostToDevice, s.get()), "cudaMemcpyAsync");
    double* x = static_cast<double*>(b);
    double* y = x + kRows * kDim;
    check_cuda(cudaMemsetAsync(x, 0x3f, size_t(kRows * kDim) * 8, s.get()), "cudaMemsetAsync");
    const k3::DevMat w{a, true, kDim, kDim};
    k3::gemm(w, x, kDim, kRows, y, kDim, s.get());  // warm-up: the launch's first-use costs
    const float gemm = best_ms([&] {
      for (int i = 0; i < kLaunches; ++i) k3::gemm(w, x, kDim, kRows, y, kDim, s.get());
    });
    gemm_tflops = 2.0 * double(kDim) * kDim * kRows * kLaunches / (gemm * 1e-3) / 1e12;
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
