#include "cuda/cuda_decode_session.h"

#include <algorithm>

#include "cuda/k3_cuda_model.h"

namespace deltafin::cuda {
namespace {

class OwningSession final : public DecodeSession {
 public:
  OwningSession(const K3Model& model, int64_t max_context) : gpu_(model, options(max_context)), s_(gpu_) {}
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) override {
    s_.stage(ids, logits, opts);
  }
  void commit(int n) override { s_.commit(n); }
  void rollback() override { s_.rollback(); }
  void reset() override { s_.reset(); }
  int64_t n_past() const override { return s_.n_past(); }
  const K3Model& host_model() const override { return s_.host_model(); }
  int max_rows() const override { return s_.max_rows(); }

 private:
  static CudaK3Model::Options options(int64_t max_context) {
    CudaK3Model::Options o;
    o.max_context = std::max<int64_t>(1, max_context);
    o.expert_slots = CudaK3Model::Options::kAutoSlots;
    return o;
  }
  CudaK3Model gpu_;  // before the session, which refers to it
  CudaK3Session s_;
};

}  // namespace

std::unique_ptr<DecodeSession> make_decode_session(const K3Model& model, int64_t max_context) {
  return std::make_unique<OwningSession>(model, max_context);
}

}  // namespace deltafin::cuda
