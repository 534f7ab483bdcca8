#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace deltafin {

// Shape of a synthesized K3-format checkpoint. Every field ends up in config.json
// exactly as the real model spells it, so the loader cannot tell it apart.
struct K3SynthSpec {
  std::string name;
  int hidden = 256, layers = 6, attn_res_block = 3;
  std::vector<int> mla_layers = {3, 6};  // 1-based, as full_attn_layers
  int kda_heads = 4, kda_head_dim = 64, conv_kernel = 4;
  int mla_heads = 4, q_lora = 64, kv_lora = 64, nope = 32, rope = 16, v_head = 32;
  int first_k_dense = 1, dense_intermediate = 512;
  int experts = 32, top_k = 4, shared_experts = 1, moe_intermediate = 128, latent = 128;
  int bpe_ranks = 1024;  // vocab = ranks + 256 specials
  int shards = 3;
  uint64_t seed = 1;

  int vocab() const { return bpe_ranks + 256; }
  uint64_t expert_bytes() const;
  uint64_t estimated_bytes() const;
};

// Named presets: demo, tiny-alt, slice-* (see docs/SYNTH.md). Throws Error for unknown names.
K3SynthSpec synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();
// Applies "field=value" overrides (e.g. layers=5, mla_layers=2+5); throws Error naming a bad one.
void apply_synth_override(K3SynthSpec& spec, const std::string& assignment);

struct SynthProgress {
  std::function<void(const std::string& file, uint64_t done, uint64_t total)> on_file;
};

// Writes config.json, generation_config.json, shards, model.safetensors.index.json,
// tiktoken.model and tokenizer_config.json into `out_dir`. Weights are random.
void write_k3_synth(const K3SynthSpec& spec, const std::string& out_dir, const SynthProgress& progress = {});

}  // namespace deltafin
