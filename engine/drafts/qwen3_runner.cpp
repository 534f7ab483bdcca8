#include "drafts/qwen3_runner.h"

#include "base/error.h"
#include "runtime/ops.h"
#include "drafts/qwen3_model.h"

namespace deltafin {

int32_t Qwen3Runner::forward_greedy(std::span<const int32_t> ids) {
  std::vector<float> logits;
  forward(ids, logits, false);
  return static_cast<int32_t>(argmax(logits.data(), static_cast<int64_t>(logits.size())));
}

Qwen3Device parse_qwen3_device(const std::string& s) {
  if (s == "auto") return Qwen3Device::Auto;
  if (s == "cpu") return Qwen3Device::Cpu;
  if (s == "cuda") return Qwen3Device::Cuda;
  throw Error("unknown Qwen3 device '" + s + "'", "use auto, cpu or cuda");
}

namespace {

class CpuBackend : public Qwen3Backend {
 public:
  explicit CpuBackend(const Qwen3Model& m) : m_(m) {}
  const char* device() const override { return "cpu"; }
  const Qwen3Config& config() const override { return m_.config(); }
  std::unique_ptr<Qwen3Runner> session() const override { return std::make_unique<Qwen3Session>(m_); }
  const Qwen3Model* host_model() const override { return &m_; }

 private:
  const Qwen3Model& m_;
};

}  // namespace

std::unique_ptr<Qwen3Backend> qwen3_cpu_backend(const Qwen3Model& m) { return std::make_unique<CpuBackend>(m); }

#ifndef DELTAFIN_QWEN3_CUDA
// Without DELTAFIN_CUDA the GPU path does not exist in the binary; say so instead.
namespace {
const char* kNoCuda = "this build has no CUDA backend (configure with -DDELTAFIN_CUDA=ON)";
}
bool qwen3_cuda_built() { return false; }
std::unique_ptr<Qwen3Backend> qwen3_cuda_backend(const Qwen3Model&, std::string* why) {
  if (why) *why = kNoCuda;
  return nullptr;
}
std::unique_ptr<Qwen3Backend> qwen3_cuda_synthetic_backend(const Qwen3Config&, uint64_t, std::string* why) {
  if (why) *why = kNoCuda;
  return nullptr;
}
#endif

std::unique_ptr<Qwen3Backend> make_qwen3_backend(const Qwen3Model& m, Qwen3Device d, std::string* note) {
  std::string why;
  if (d != Qwen3Device::Cpu) {
    if (auto b = qwen3_cuda_backend(m, &why)) {
      if (note) *note = "cuda";
      return b;
    }
  }
  if (note) *note = d == Qwen3Device::Cpu ? "cpu" : "cpu (" + why + ")";
  return qwen3_cpu_backend(m);
}

}  // namespace deltafin
