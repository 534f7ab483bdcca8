#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "drafts/dspark_config.h"
#include "runtime/k3_model.h"
#include "runtime/ops.h"

namespace deltafin {

struct DSparkLayerWeights {
  std::vector<float> input_norm, post_attn_norm, q_a_norm, kv_a_norm;
  Mat q_a_proj, q_b_proj, kv_a_proj, kv_b_proj, o_proj, g_proj;  // g_proj only with an output gate
  Mat gate, up, down;                                            // SiLU-GLU MLP
};

// A DSpark checkpoint bound to its K3 target. The block pass embeds with the
// target's embedding and projects with the target's lm_head: DSpark's own
// embed_tokens copy is never bound, so it is never read.
class DSparkModel {
 public:
  static std::unique_ptr<DSparkModel> load(const std::string& root, const K3Model& target);

  const DSparkConfig& config() const { return cfg_; }
  const K3Model& target() const { return target_; }
  const std::string& root() const { return root_; }
  uint64_t weight_bytes() const { return bytes_; }

  Mat context_proj;
  std::vector<float> context_norm, final_norm;
  std::vector<DSparkLayerWeights> layers;
  Mat markov_w1, markov_w2;  // [vocab][rank]

 private:
  explicit DSparkModel(const K3Model& t) : target_(t) {}
  const K3Model& target_;
  std::string root_;
  DSparkConfig cfg_;
  std::unique_ptr<Checkpoint> ck_;
  uint64_t bytes_ = 0;
};

}  // namespace deltafin
