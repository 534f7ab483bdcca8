#pragma once
// What the placement planner needs to know about this machine's CUDA GPUs: free and total memory,
// and the rates of pinned host-to-device copies, device memory and the forward's matmul. Host code
// over the CUDA runtime.
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::cuda {

struct GpuMemory {
  std::string name;
  uint64_t free_bytes = 0, total_bytes = 0;
};

// The CUDA device of each logical GPU: every visible device, or the list DELTAFIN_CUDA_DEVICES
// gives ("0,1"; "0,0" makes two logical GPUs of device 0, so the multi-GPU forward and its
// hand-overs run for real on a machine with one). Empty when no device is visible; Error for a bad list.
std::vector<int> logical_devices();

// Every logical GPU (empty when none or the driver is missing). Logical GPUs sharing a device
// each get an equal share of its free and total memory, and their names say which device they are on.
std::vector<GpuMemory> gpu_memory();

// Free memory of CUDA device `device` (a device ordinal, not a logical GPU).
uint64_t device_free_bytes(int device);

// Pinned host-to-device copy rate and device-memory rate (a device-to-device copy reads and writes
// each byte: twice its bytes over its time) of `device`, in GB/s (1e9 bytes per second), and the
// rate of the K3 forward's own matmul at many rows (k3::gemm, fp64 over BF16 weights, a 16-row pass
// over a 7168 x 7168 matrix) in 1e12 flop/s: fp64 runs at 1/2 of fp32 on data-centre GPUs and at
// 1/64 on most desktop ones, so the planner's GPU compute is measured, not assumed.
void probe_gpu_rates(int device, double& h2d_gbps, double& hbm_gbps, double& gemm_tflops);

}  // namespace deltafin::cuda
