#include "cuda/cuda_decode_session.h"

#include <algorithm>

#include "base/error.h"
#include "cuda/k3_cuda_model.h"
#include "placement/split_session.h"

namespace deltafin::cuda {
namespace {

// The device model as a base class constructed before the session that refers to it (and
// destroyed after it), so the session itself is the DecodeSession handed out.
struct DeviceModel {
  DeviceModel(const K3Model& model, const CudaK3Model::Options& o) : gpu(model, o) {}
  static CudaK3Model::Options options(int64_t max_context, int expert_slots, bool host_guesses, bool copies_ahead) {
    CudaK3Model::Options o;
    o.max_context = std::max<int64_t>(1, max_context);
    o.expert_slots = expert_slots > 0 ? expert_slots : CudaK3Model::Options::kAutoSlots;
    o.host_guesses = host_guesses;
    if (!copies_ahead) o.expert_prefetch = o.expert_prefetch_auto = false;
    return o;
  }
  CudaK3Model gpu;
};

class OwningSession final : private DeviceModel, public CudaK3Session {
 public:
  OwningSession(const K3Model& model, const CudaK3Model::Options& o) : DeviceModel(model, o), CudaK3Session(gpu) {}
};

// The GPU model and both sessions, constructed before the split session that refers to them.
struct SplitParts {
  SplitParts(const K3Model& model, int64_t max_context, placement::SplitLayout layout)
      : gpu(model, options(max_context, std::move(layout))), gpu_session(gpu), cpu_session(model) {}
  static CudaK3Model::Options options(int64_t max_context, placement::SplitLayout layout) {
    CudaK3Model::Options o;
    o.max_context = std::max<int64_t>(1, max_context);
    o.layout = std::move(layout);
    return o;
  }
  CudaK3Model gpu;
  CudaK3Session gpu_session;
  K3Session cpu_session;
};

class OwningSplitSession final : private SplitParts, public placement::SplitSession {
 public:
  OwningSplitSession(const K3Model& model, int64_t max_context, placement::SplitLayout layout)
      : SplitParts(model, max_context, layout), SplitSession(cpu_session, gpu_session, gpu.layout()) {}
};

// One model and session per GPU and the CPU session, constructed before the split session that
// refers to them (and destroyed after it).
struct MultiParts {
  MultiParts(const K3Model& model, int64_t max_context, const placement::DeviceLayout& layout,
             const std::vector<int>& devices)
      : cpu_session(model) {
    if (devices.size() != layout.gpus.size())
      throw Error("the plan places layers on " + std::to_string(layout.gpus.size()) + " GPU(s) but " +
                      std::to_string(devices.size()) + " CUDA device(s) were given",
                  "give one --vram-budget figure per GPU (DELTAFIN_CUDA_DEVICES chooses the devices)");
    for (size_t g = 0; g < devices.size(); ++g) {
      CudaK3Model::Options o;
      o.max_context = std::max<int64_t>(1, max_context);
      o.layout = layout.gpus[g];
      o.device = devices[g];
      models.push_back(std::make_unique<CudaK3Model>(model, o));
      sessions.push_back(std::make_unique<CudaK3Session>(*models.back()));
      pointers.push_back(sessions.back().get());
    }
  }
  K3Session cpu_session;
  std::vector<std::unique_ptr<CudaK3Model>> models;
  std::vector<std::unique_ptr<CudaK3Session>> sessions;  // declared after the models: destroyed first
  std::vector<LayerRangeSession*> pointers;
};

class OwningMultiSession final : private MultiParts, public placement::SplitSession {
 public:
  OwningMultiSession(const K3Model& model, int64_t max_context, placement::DeviceLayout layout,
                     const std::vector<int>& devices, std::vector<std::string> names)
      : MultiParts(model, max_context, layout, devices),
        SplitSession(cpu_session, pointers, layout, std::move(names)) {}
};

}  // namespace

std::unique_ptr<DecodeSession> make_multi_gpu_session(const K3Model& model, int64_t max_context,
                                                      placement::DeviceLayout layout, std::vector<int> devices,
                                                      std::vector<std::string> names) {
  layout.check(model.config().layers);
  if (layout.gpus.size() == 1 && devices.size() == 1 && devices[0] == 0)
    return make_split_session(model, max_context, layout.gpus[0]);
  return std::make_unique<OwningMultiSession>(model, max_context, std::move(layout), devices, std::move(names));
}

std::unique_ptr<DecodeSession> make_decode_session(const K3Model& model, int64_t max_context, int expert_slots,
                                                   bool host_guesses, bool copies_ahead) {
  return std::make_unique<OwningSession>(model,
                                         DeviceModel::options(max_context, expert_slots, host_guesses, copies_ahead));
}

std::unique_ptr<DecodeSession> make_split_session(const K3Model& model, int64_t max_context,
                                                  placement::SplitLayout layout) {
  if (!layout.any_cpu() && layout.streamed_units() == 0) {
    // Every unit in VRAM: whole passes (CUDA graphs), with the plan's expert tier.
    CudaK3Model::Options o;
    o.max_context = std::max<int64_t>(1, max_context);
    o.layout = std::move(layout);
    return std::make_unique<OwningSession>(model, o);
  }
  return std::make_unique<OwningSplitSession>(model, max_context, std::move(layout));
}

}  // namespace deltafin::cuda
