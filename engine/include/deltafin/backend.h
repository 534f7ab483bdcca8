#pragma once
// Which device computes the K3 forward, and the GPU entry points the applications need. The
// CUDA backend exists only in builds with DELTAFIN_CUDA=ON: this is the one place that knows,
// so no application or server code asks the preprocessor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace deltafin {

class DecodeSession;
class K3Model;
namespace placement {
struct Plan;
}

// True when this build has the CUDA backend (DELTAFIN_CUDA=ON).
bool cuda_backend_built();

// Whether a GPU can run the forward: the build, then the driver and a device.
struct CudaProbe {
  enum class Status { NotBuilt, NoDevice, Usable } status = Status::NotBuilt;
  std::string reason;    // NoDevice: what the driver said
  std::string gpu_name;  // Usable: the device's name
};
CudaProbe probe_cuda();

// `--device cpu|cuda` as the command line gives it: true for cuda, and an Error saying how to get
// the backend when this build has none (before anything is loaded).
bool wants_cuda(const std::string& device);

// A session on the GPU for generate() (greedy, sampled or speculative), owning the device copy of
// the model: every expert resident in VRAM when it fits, else a VRAM tier over the model's own
// RAM and disk tiers. max_context: the most tokens the session will hold. With a plan: its placement
// for GPU 0 (layers split between the GPU and the CPU, placement/split_session.h); the model must
// have been loaded with placement::host_spine_placement(plan). Throws Error when there is no usable
// GPU, too little memory, or no CUDA backend in this build.
std::unique_ptr<DecodeSession> make_cuda_session(const K3Model& model, int64_t max_context,
                                                 const placement::Plan* plan = nullptr);
// Logits of every position of `ids` from the GPU forward ([ids.size() * vocab]).
std::vector<float> cuda_all_logits(const K3Model& model, const std::vector<int32_t>& ids);

// This machine's CUDA GPUs for the placement planner: each one's free and total memory (empty in a
// build without CUDA or with no device), and the rates of GPU 0 (false without one).
struct GpuFree {
  std::string name;
  uint64_t free_bytes = 0, total_bytes = 0;
  // Free memory less 1 GiB left to the driver and other processes: a plan's default VRAM budget,
  // and what the whole-spine CUDA forward must fit in.
  uint64_t usable_bytes() const {
    constexpr uint64_t margin = 1ull << 30;
    return free_bytes > margin ? free_bytes - margin : 0;
  }
};
std::vector<GpuFree> cuda_gpus();
bool probe_cuda_rates(double& h2d_gbps, double& hbm_gbps, double& gemm_tflops);

}  // namespace deltafin
