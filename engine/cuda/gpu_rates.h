#pragma once
// What the placement planner needs to know about this machine's CUDA GPUs: free and total memory,
// and the rates of pinned host-to-device copies and device memory. Host code over the CUDA runtime.
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::cuda {

struct GpuMemory {
  std::string name;
  uint64_t free_bytes = 0, total_bytes = 0;
};

// Every visible device (empty when none or the driver is missing).
std::vector<GpuMemory> gpu_memory();

// Pinned host-to-device copy rate and device-memory rate (a device-to-device copy reads and writes
// each byte: twice its bytes over its time) of `device`, in GB/s (1e9 bytes per second).
void probe_gpu_rates(int device, double& h2d_gbps, double& hbm_gbps);

}  // namespace deltafin::cuda
