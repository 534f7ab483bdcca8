#include "cuda/cuda_decode_session.h"

#include <algorithm>

#include "cuda/k3_cuda_model.h"
#include "placement/split_session.h"

namespace deltafin::cuda {
namespace {

// The device model as a base class constructed before the session that refers to it (and
// destroyed after it), so the session itself is the DecodeSession handed out.
struct DeviceModel {
  DeviceModel(const K3Model& model, const CudaK3Model::Options& o) : gpu(model, o) {}
  static CudaK3Model::Options options(int64_t max_context) {
    CudaK3Model::Options o;
    o.max_context = std::max<int64_t>(1, max_context);
    o.expert_slots = CudaK3Model::Options::kAutoSlots;
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

}  // namespace

std::unique_ptr<DecodeSession> make_decode_session(const K3Model& model, int64_t max_context) {
  return std::make_unique<OwningSession>(model, DeviceModel::options(max_context));
}

std::unique_ptr<DecodeSession> make_split_session(const K3Model& model, int64_t max_context, placement::SplitLayout layout) {
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
