#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin {

// Every dimension of a K3-family checkpoint, read from its config.json.
struct K3Config {
  int64_t bos_token_id = -1, eos_token_id = -1, pad_token_id = -1;
  bool tie_word_embeddings = false;
  std::string synth_preset;  // set when `deltafin synth` made this checkpoint (random weights)

  int hidden = 0, layers = 0, vocab = 0;
  double rms_eps = 1e-5;  // as written (1e-5, not the fp32 value next to it): the norms add it in fp64
  float situ_beta = 4.f, situ_linear_beta = 25.f;
  int attn_res_block = 0;

  // MLA (NoPE, optionally gated output)
  int mla_heads = 0, q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0, v_head = 0;
  bool mla_output_gate = true;

  // KDA
  int kda_heads = 0, kda_head_dim = 0, conv_kernel = 0;
  float gate_lower_bound = -5.f;
  std::vector<bool> is_mla;  // per 0-based layer

  // MLP / MoE
  int first_k_dense = 1, dense_intermediate = 0;
  int experts = 0, top_k = 0, shared_experts = 0, moe_intermediate = 0, latent = 0;
  bool latent_norm = true, renormalize = true;
  float routed_scaling = 1.f;

  bool is_moe(int layer) const { return layer >= first_k_dense; }
  int moe_layers() const { return layers - first_k_dense; }
  int kda_dim() const { return kda_heads * kda_head_dim; }
  int mla_qk_head() const { return qk_nope + qk_rope; }
  int mla_cache_width() const { return kv_lora_rank + qk_rope; }
  // Bytes of one routed expert as stored (three MXFP4 matrices with E8M0 scales).
  uint64_t expert_bytes() const;

  // Parses and validates config.json text; throws Error naming the offending field.
  static K3Config parse(const std::string& json_text, const std::string& origin);
  static K3Config load(const std::string& path);
};

// True when the config describes the released 93-layer Kimi K3 rather than a
// smaller checkpoint of the same family.
bool claims_k3_release(const K3Config& c);

}  // namespace deltafin
