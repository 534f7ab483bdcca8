#include "deltafin/backend.h"

#include <algorithm>
#include <span>

#include "base/error.h"
#include "runtime/k3_model.h"
// The CUDA backend's library defines DELTAFIN_HAVE_CUDA_K3 for what links it: only this file asks.
#ifdef DELTAFIN_HAVE_CUDA_K3
#include "cuda/cuda_decode_session.h"
#include "cuda/cuda_kernels.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_model.h"
#include "placement/split_layout.h"
#endif

namespace deltafin {

#ifdef DELTAFIN_HAVE_CUDA_K3
bool cuda_backend_built() { return true; }

CudaProbe probe_cuda() {
  CudaProbe p;
  try {
    std::string reason;
    if (!cuda::device_available(&reason)) {
      p.status = CudaProbe::Status::NoDevice;
      p.reason = reason;
      return p;
    }
    p.status = CudaProbe::Status::Usable;
    p.gpu_name = cuda::device_info().name;
  } catch (const std::exception& e) {
    p.status = CudaProbe::Status::NoDevice;
    p.reason = e.what();
  }
  return p;
}

bool wants_cuda(const std::string& device) { return device == "cuda"; }

std::unique_ptr<DecodeSession> make_cuda_session(const K3Model& model, int64_t max_context,
                                                 const placement::Plan* plan) {
  if (!plan) return cuda::make_decode_session(model, max_context);
  if (plan->budget.gpus.size() <= 1)
    return cuda::make_split_session(model, max_context, placement::split_layout(*plan));
  // Several GPUs: the plan's GPU g is logical GPU budget.gpus[g].device of this machine.
  const std::vector<int> logical = cuda::logical_devices();
  std::vector<int> devices;
  std::vector<std::string> names;
  for (size_t g = 0; g < plan->budget.gpus.size(); ++g) {
    const placement::GpuBudget& b = plan->budget.gpus[g];
    const int l = b.device >= 0 ? b.device : int(g);
    if (l >= int(logical.size()))
      throw Error(
          "the plan places layers on " + b.name + " but this machine has " + std::to_string(logical.size()) + " GPU(s)",
          "plan for this machine (leave out --other-machine), or set DELTAFIN_CUDA_DEVICES");
    devices.push_back(logical[size_t(l)]);
    names.push_back(b.name);
  }
  return cuda::make_multi_gpu_session(model, max_context, placement::device_layout(*plan), devices, names);
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

std::vector<GpuFree> cuda_gpus() {
  std::vector<GpuFree> out;
  for (const auto& g : cuda::gpu_memory())
    out.push_back(GpuFree{g.name, g.free_bytes, g.total_bytes});  // logical GPUs, in order
  return out;
}

bool probe_cuda_rates(double& h2d_gbps, double& hbm_gbps, double& gemm_tflops) {
  const std::vector<int> devices = cuda::logical_devices();
  if (devices.empty()) return false;
  cuda::probe_gpu_rates(devices[0], h2d_gbps, hbm_gbps, gemm_tflops);
  return true;
}
#else
bool cuda_backend_built() { return false; }

CudaProbe probe_cuda() { return CudaProbe{}; }

bool wants_cuda(const std::string& device) {
  if (device != "cuda") return false;
  throw Error("this deltafin was built without the CUDA backend",
              "rebuild with -DDELTAFIN_CUDA=ON or use --device cpu");
}

std::unique_ptr<DecodeSession> make_cuda_session(const K3Model&, int64_t, const placement::Plan*) {
  wants_cuda("cuda");
  return {};
}

std::vector<float> cuda_all_logits(const K3Model&, const std::vector<int32_t>&) {
  wants_cuda("cuda");
  return {};
}

std::vector<GpuFree> cuda_gpus() { return {}; }
bool probe_cuda_rates(double&, double&, double&) { return false; }
#endif

}  // namespace deltafin
