#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin {

// YaRN parameters of DSpark's rope lane (DeepSeek style).
struct YarnParams {
  double theta = 50000, factor = 1, original_max = 0, beta_fast = 32, beta_slow = 1;
  double mscale = 1, mscale_all_dim = 0;
  bool yarn = false;  // false: plain RoPE with `theta`
};

// A DSpark drafter's config.json (K3-SPEC.md section 5). Every field is read,
// none assumed: other DSpark checkpoints use other taps and block sizes.
struct DSparkConfig {
  int hidden = 0, intermediate = 0, layers = 0, vocab = 0;
  int heads = 0, q_lora = 0, kv_lora = 0, nope = 0, rope = 0, v_head = 0;
  bool output_gate = false;
  float rms_eps = 1e-5f;
  YarnParams yarn;
  std::vector<int> target_layer_ids;  // 0-based target layers, in concatenation order
  int target_hidden = 0, target_layers = 0;
  int32_t mask_token_id = -1;
  int markov_rank = 0;
  int block_size = 7;  // rows of a block pass = drafts per proposal

  int qk_head() const { return nope + rope; }
  int cache_width() const { return kv_lora + rope; }

  static DSparkConfig parse(const std::string& json_text, const std::string& origin);
  static DSparkConfig load(const std::string& path);
};

}  // namespace deltafin
