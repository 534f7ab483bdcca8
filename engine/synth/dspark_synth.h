#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "synth/k3_synth.h"

namespace deltafin {

// Shape of a synthesized DSpark drafter, paired with a synthesized K3 target:
// config.json with every field of the real DSpark config and one BF16
// model.safetensors with the real tensor names (no prefix), random weights.
struct DSparkSynthSpec {
  std::string name, target_preset;
  int hidden = 256, layers = 2, heads = 4, q_lora = 64, kv_lora = 32, nope = 16, rope = 16, v_head = 32;
  int intermediate = 384, markov_rank = 8;
  std::vector<int> target_layer_ids;  // 0-based target layers
  int target_layers = 0, vocab = 0, bpe_ranks = 0;
  uint64_t seed = 1;
};

// dspark-demo (for the demo target), dspark-tiny-alt (for tiny-alt). Throws Error for other names.
DSparkSynthSpec dspark_synth_preset(const std::string& name);
std::vector<std::string> dspark_synth_preset_names();
bool is_dspark_preset(const std::string& name);
// The DSpark shape that fits a K3 synth spec (taps spread over its layers).
DSparkSynthSpec dspark_spec_for(const K3SynthSpec& target, const std::string& name);

void write_dspark_synth(const DSparkSynthSpec& spec, const std::string& out_dir);

}  // namespace deltafin
