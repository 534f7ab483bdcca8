#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "runtime/ops.h"
#include "drafts/qwen3_runner.h"

namespace deltafin {

// A Qwen3 dense checkpoint's config.json (GQA, per-head q/k RMSNorm, rotate-half RoPE).
struct Qwen3Config {
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  float rms_eps = 1e-6f;
  double rope_theta = 1e6;
  bool tied = true;

  static Qwen3Config parse(const std::string& json_text, const std::string& origin);
  static Qwen3Config load(const std::string& path);
};

struct Qwen3LayerWeights {
  std::vector<float> input_norm, post_attn_norm, q_norm, k_norm;
  Mat q_proj, k_proj, v_proj, o_proj, gate, up, down;
};

// Qwen3-0.6B/1.7B-Base (K3-SPEC.md section 5), weights bound in place.
class Qwen3Model {
 public:
  static std::unique_ptr<Qwen3Model> load(const std::string& root);
  const Qwen3Config& config() const { return cfg_; }
  const std::string& root() const { return root_; }
  uint64_t weight_bytes() const { return bytes_; }

  Mat embed, lm_head;  // lm_head is embed when the embeddings are tied
  std::vector<float> final_norm;
  std::vector<Qwen3LayerWeights> layers;

 private:
  std::string root_;
  Qwen3Config cfg_;
  std::unique_ptr<Checkpoint> ck_;
  uint64_t bytes_ = 0;
};

// One sequence over a Qwen3Model on the CPU.
class Qwen3Session : public Qwen3Runner {
 public:
  explicit Qwen3Session(const Qwen3Model& m);
  void forward(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits = false) override;
  void truncate(int64_t n) override;
  int64_t n_past() const override { return n_past_; }

 private:
  const Qwen3Model& m_;
  std::vector<std::vector<float>> k_, v_;  // [layer][pos][kv_heads * head_dim]
  int64_t n_past_ = 0;
};

}  // namespace deltafin
