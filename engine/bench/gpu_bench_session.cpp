#include "bench/gpu_bench_session.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
// In CUDA builds this library links the CUDA backend, which defines DELTAFIN_HAVE_CUDA_K3.
#ifdef DELTAFIN_HAVE_CUDA_K3
#include "cuda/cuda_decode_session.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_support.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_model.h"
#include "cuda/vram_expert_cache.h"
#endif

namespace deltafin {

#ifdef DELTAFIN_HAVE_CUDA_K3
bool bench_cuda_built() { return true; }

void require_gpu() {
  std::string why;
  if (!cuda::device_available(&why))
    throw Error("--device cuda: " + why, "run the GPU arms on a machine with a usable NVIDIA GPU");
}

std::unique_ptr<DecodeSession> open_gpu_bench_session(const K3Model& host, int64_t max_context, int vram_experts,
                                                      bool host_guesses, bool copies_ahead) {
  return cuda::make_decode_session(host, max_context, vram_experts, host_guesses, copies_ahead);
}

double probe_h2d_gbps() {
  const std::vector<int> devices = cuda::logical_devices();
  if (devices.empty()) throw Error("--device cuda: no usable CUDA device", "run the arm on a machine with a GPU");
  double h2d = 0, hbm = 0, gemm = 0;
  // make_decode_session's model lives on CUDA device 0.
  cuda::DeviceScope on(0);
  cuda::probe_gpu_rates(0, h2d, hbm, gemm);
  return h2d;
}

void preload_vram(DecodeSession& session, const PassRequests& pass) {
  if (const auto v = session.vram_tier(); v && v->all_resident) return;
  auto* s = dynamic_cast<cuda::CudaK3Session*>(&session);
  if (!s) throw Error("the bench's GPU preload needs a session from open_gpu_bench_session");
  cuda::VramExpertCache& tier = s->model().experts();
  std::set<std::pair<int, int>> distinct;
  for (const auto& [layer, experts] : pass)
    for (int e : experts) distinct.emplace(layer, e);
  if (distinct.size() > size_t(tier.slots()))
    throw Error("--compute-floor: a decode step needs " + std::to_string(distinct.size()) +
                    " experts in VRAM but the arm's VRAM tier has " + std::to_string(tier.slots()) + " slots",
                "give the floor arm --vram-experts " + std::to_string(distinct.size()) + " or more");
  cuda::DeviceScope on(s->model().device());
  tier.evict_all();
  std::vector<cuda::MxExpert> views;
  for (const auto& [layer, experts] : pass) tier.gather(layer, experts, views, nullptr);
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (bench preload)");
}
#else
namespace {
[[noreturn]] void no_cuda() {
  throw Error("--device cuda: this deltafin was built without the CUDA backend",
              "rebuild with -DDELTAFIN_CUDA=ON, or drop --device cuda from the arm");
}
}  // namespace

bool bench_cuda_built() { return false; }
void require_gpu() { no_cuda(); }
std::unique_ptr<DecodeSession> open_gpu_bench_session(const K3Model&, int64_t, int, bool, bool) { no_cuda(); }
double probe_h2d_gbps() { no_cuda(); }
void preload_vram(DecodeSession&, const PassRequests&) { no_cuda(); }
#endif

}  // namespace deltafin
