#pragma once
// `--device cpu|cuda` for the commands that run the K3 forward. The CUDA paths exist only in
// builds with DELTAFIN_CUDA=ON; elsewhere choosing cuda is an error that says how to get it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltafin {
class K3Model;
class DecodeSession;
namespace placement {
struct Plan;
}
}  // namespace deltafin

namespace deltafin::cli {

void add_device_option(CLI::App* cmd, std::string& device);
bool wants_cuda(const std::string& device);  // throws Error when cuda is asked for but not built
// A session on the GPU for generate() (greedy, sampled or speculative), owning the device copy of
// the model: every expert resident in VRAM when it fits, else a VRAM tier over the model's own
// RAM and disk tiers. max_context: the most tokens the session will hold. With a plan: its placement
// for GPU 0 (layers split between the GPU and the CPU, placement/split_session.h); the model must
// have been loaded with placement::host_spine_placement(plan).
std::unique_ptr<DecodeSession> make_cuda_session(const K3Model& model, int64_t max_context,
                                                 const placement::Plan* plan = nullptr);
std::vector<float> cuda_all_logits(const K3Model& model, const std::vector<int32_t>& ids);
// The GPU verify-pass table (experts: resident or streamed = read from disk every pass), as Markdown.
std::string cuda_bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps,
                              const std::string& experts);

// This machine's CUDA GPUs for the placement planner: each one's free and total memory (empty in a
// build without CUDA or with no device), and the rates of GPU 0 (false without CUDA).
struct GpuFree {
  std::string name;
  uint64_t free_bytes = 0, total_bytes = 0;
};
std::vector<GpuFree> cuda_gpus();
bool probe_cuda_rates(double& h2d_gbps, double& hbm_gbps);

}  // namespace deltafin::cli
