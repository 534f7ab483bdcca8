#include "cuda_device.h"

#include <algorithm>
#include <span>
#include <sstream>

#include "base/error.h"
#include "runtime/k3_model.h"
#ifdef DELTAFIN_HAVE_CUDA_K3
#include "cuda/cuda_decode_session.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_bench.h"
#include "cuda/k3_cuda_model.h"
#include "placement/split_layout.h"
#endif

namespace deltafin::cli {

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device, "Run the forward on the cpu or on a CUDA GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

bool wants_cuda(const std::string& device) {
  if (device != "cuda") return false;
#ifdef DELTAFIN_HAVE_CUDA_K3
  return true;
#else
  throw Error("this deltafin was built without the CUDA backend", "rebuild with -DDELTAFIN_CUDA=ON or use --device cpu");
#endif
}

#ifdef DELTAFIN_HAVE_CUDA_K3
std::unique_ptr<DecodeSession> make_cuda_session(const K3Model& model, int64_t max_context, const placement::Plan* plan) {
  if (plan) return cuda::make_split_session(model, max_context, placement::split_layout(*plan));
  return cuda::make_decode_session(model, max_context);
}

std::vector<float> cuda_all_logits(const K3Model& model, const std::vector<int32_t>& ids) {
  cuda::CudaK3Model::Options o;
  o.max_context = int64_t(ids.size()) + 1;
  cuda::CudaK3Model gpu(model, o);
  cuda::CudaK3Session s(gpu);
  std::vector<float> all, part;
  const size_t chunk = size_t(o.max_rows);
  for (size_t i = 0; i < ids.size(); i += chunk) {
    const size_t n = std::min(chunk, ids.size() - i);
    s.stage(std::span<const int32_t>(ids).subspan(i, n), part);
    s.commit(int(n));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::string cuda_bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps,
                              const std::string& experts) {
  std::ostringstream out;
  cuda::bench_verify(root, rows, context, reps, experts == "streamed" ? "disk" : "resident", out);
  return out.str();
}

std::vector<GpuFree> cuda_gpus() {
  std::vector<GpuFree> out;
  for (const auto& g : cuda::gpu_memory()) out.push_back(GpuFree{g.name, g.free_bytes, g.total_bytes});
  return out;
}

bool probe_cuda_rates(double& h2d_gbps, double& hbm_gbps) {
  if (cuda::gpu_memory().empty()) return false;
  cuda::probe_gpu_rates(0, h2d_gbps, hbm_gbps);
  return true;
}
#else
std::vector<GpuFree> cuda_gpus() { return {}; }
bool probe_cuda_rates(double&, double&) { return false; }
std::unique_ptr<DecodeSession> make_cuda_session(const K3Model&, int64_t, const placement::Plan*) {
  wants_cuda("cuda");
  return {};
}
std::vector<float> cuda_all_logits(const K3Model&, const std::vector<int32_t>&) { wants_cuda("cuda"); return {}; }
std::string cuda_bench_verify(const std::string&, const std::vector<int>&, int, int, const std::string&) {
  wants_cuda("cuda");
  return {};
}
#endif

}  // namespace deltafin::cli
