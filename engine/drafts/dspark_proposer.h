#pragma once
#include <vector>

#include "runtime/draft_proposer.h"
#include "drafts/dspark_model.h"
#include "drafts/dspark_rope.h"

namespace deltafin {

// DSpark drafting (K3-SPEC.md section 5): every committed token's target taps
// become one context row per draft layer; a proposal is one block pass over
// [anchor, mask x (T-1)] followed by the Markov head.
class DSparkProposer : public DraftProposer {
 public:
  explicit DSparkProposer(const DSparkModel& m);

  std::string name() const override { return "dspark"; }
  std::vector<int> tap_layers() const override { return m_.config().target_layer_ids; }
  bool begin(int64_t n_past) override;
  void on_commit(int64_t pos0, std::span<const int32_t> ids, const std::vector<const float*>& taps) override;
  void propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) override;
  int preferred_k() const override { return m_.config().block_size; }

  // The stages, also used by the tests.
  int64_t context_length() const { return n_ctx_; }
  void truncate(int64_t n);
  // Appends context rows for positions context_length() .. + n - 1; taps[i] holds n rows.
  void add_context(int n, const std::vector<const float*>& taps);
  // Base logits [block_size][vocab] of the block anchored at position context_length().
  void block_logits(int32_t anchor, std::vector<float>& base);
  // x_k = argmax(base[k-1] + markov_w1[x_{k-1}] . markov_w2^T), x_0 = anchor.
  void markov(int32_t anchor, const std::vector<float>& base, std::vector<int32_t>& drafts) const;

 private:
  void attention(int layer, const float* x, int T, int64_t pos0, float* out);

  const DSparkModel& m_;
  DSparkRope rope_;
  float scale_;
  std::vector<std::vector<float>> cache_;  // [layer][context rows][kv_lora | rope]
  int64_t n_ctx_ = 0;
  std::vector<float> base_;
};

}  // namespace deltafin
