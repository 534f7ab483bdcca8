#include "placement/model_byte_map.h"

#include <algorithm>
#include <memory>

#include "base/error.h"
#include "model/checkpoint.h"

namespace deltafin::placement {

namespace {

struct ListBuilder {
  const std::string& prefix;
  std::vector<TensorBytes> out;
  void add(const std::string& name, uint64_t numel, int elem_bytes, TensorRole role, int unit) {
    out.push_back(TensorBytes{prefix + name, numel * elem_bytes, numel, role, unit});
  }
  void mat(const std::string& name, uint64_t rows, uint64_t cols, int unit) {
    add(name, rows * cols, 2, TensorRole::Matrix, unit);
  }
  void small(const std::string& name, uint64_t n, int unit, int elem_bytes = 2) {
    add(name, n, elem_bytes, TensorRole::Small, unit);
  }
  void mlp(const std::string& base, uint64_t H, uint64_t I, int unit) {
    mat(base + ".gate_proj.weight", I, H, unit);
    mat(base + ".up_proj.weight", I, H, unit);
    mat(base + ".down_proj.weight", H, I, unit);
  }
};

}  // namespace

std::vector<TensorBytes> k3_text_tensors(const K3Config& c, const std::string& prefix) {
  ListBuilder b{prefix, {}};
  const uint64_t H = c.hidden;
  b.add("model.embed_tokens.weight", uint64_t(c.vocab) * H, 2, TensorRole::Matrix, kEmbedUnit);
  if (!c.tie_word_embeddings) b.mat("lm_head.weight", c.vocab, H, kLmHeadUnit);
  b.small("model.norm.weight", H, kHeadUnit);
  b.small("model.output_attn_res_norm.weight", H, kHeadUnit);
  b.small("model.output_attn_res_proj.weight", H, kHeadUnit);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm.weight", "post_attention_layernorm.weight", "self_attention_res_norm.weight",
                          "self_attention_res_proj.weight", "mlp_res_norm.weight", "mlp_res_proj.weight"})
      b.small(p + n, H, l);
    const std::string a = p + "self_attn.";
    if (c.is_mla[l]) {
      const uint64_t nh = c.mla_heads;
      b.mat(a + "q_a_proj.weight", c.q_lora_rank, H, l);
      b.small(a + "q_a_layernorm.weight", c.q_lora_rank, l);
      b.mat(a + "q_b_proj.weight", nh * c.mla_qk_head(), c.q_lora_rank, l);
      b.mat(a + "kv_a_proj_with_mqa.weight", c.kv_lora_rank + c.qk_rope, H, l);
      b.small(a + "kv_a_layernorm.weight", c.kv_lora_rank, l);
      b.mat(a + "kv_b_proj.weight", nh * (c.qk_nope + c.v_head), c.kv_lora_rank, l);
      b.mat(a + "o_proj.weight", H, nh * c.v_head, l);
      if (c.mla_output_gate) b.mat(a + "g_proj.weight", nh * c.v_head, H, l);
    } else {
      const uint64_t C = c.kda_dim(), K = c.conv_kernel, rank = c.kda_head_dim;
      for (const char* n : {"q_proj.weight", "k_proj.weight", "v_proj.weight", "g_proj.weight"}) b.mat(a + n, C, H, l);
      b.mat(a + "o_proj.weight", H, C, l);
      b.mat(a + "f_a_proj.weight", rank, H, l);
      b.mat(a + "f_b_proj.weight", C, rank, l);
      b.mat(a + "b_proj.weight", c.kda_heads, H, l);
      for (const char* n : {"q_conv1d.weight", "k_conv1d.weight", "v_conv1d.weight"}) b.small(a + n, C * K, l, 4);
      // A_log is stored padded to the head dimension (K3-SPEC.md section 3).
      b.small(a + "A_log", uint64_t(std::max(c.kda_heads, c.kda_head_dim)), l, 4);
      b.small(a + "dt_bias", C, l, 4);
      b.small(a + "o_norm.weight", c.kda_head_dim, l, 4);
    }
    if (!c.is_moe(l)) {
      b.mlp(p + "mlp", H, c.dense_intermediate, l);
      continue;
    }
    const std::string m = p + "block_sparse_moe.";
    b.add(m + "gate.weight", uint64_t(c.experts) * H, 2, TensorRole::Router, l);
    b.add(m + "gate.e_score_correction_bias", c.experts, 4, TensorRole::Router, l);
    b.mat(m + "routed_expert_down_proj.weight", c.latent, H, l);
    b.mat(m + "routed_expert_up_proj.weight", H, c.latent, l);
    if (c.latent_norm) b.small(m + "routed_expert_norm.weight", c.latent, l);
    if (c.shared_experts > 0) b.mlp(m + "shared_experts", H, uint64_t(c.shared_experts) * c.moe_intermediate, l);
    const uint64_t I = c.moe_intermediate, Z = c.latent;
    for (int e = 0; e < c.experts; ++e) {
      const std::string x = m + "experts." + std::to_string(e) + ".";
      // w1 gate [I][Z], w2 down [Z][I], w3 up [I][Z]: 4-bit codes and one E8M0 scale per 32.
      const uint64_t packed[3] = {I * Z / 2, Z * I / 2, I * Z / 2}, scales[3] = {I * Z / 32, Z * I / 32, I * Z / 32};
      for (int k = 0; k < 3; ++k) {
        const std::string w = x + "w" + std::to_string(k + 1) + ".";
        b.out.push_back(TensorBytes{prefix + w + "weight_packed", packed[k], packed[k] * 2, TensorRole::Expert, l});
        b.out.push_back(TensorBytes{prefix + w + "weight_scale", scales[k], 0, TensorRole::Expert, l});
      }
    }
  }
  return std::move(b.out);
}

uint64_t ModelByteMap::spine_bytes() const {
  uint64_t n = embed_bytes + lm_head_bytes + head_small_bytes;
  for (const auto& L : layers) n += L.matrix_bytes + L.router_bytes + L.small_bytes;
  return n;
}

uint64_t ModelByteMap::spine_bytes_per_pass() const {
  uint64_t n = (tied_embeddings ? embed_bytes : lm_head_bytes);
  for (const auto& L : layers) n += L.matrix_bytes + L.router_bytes;
  return n;
}

uint64_t ModelByteMap::largest_unit_bytes() const {
  uint64_t n = tied_embeddings ? embed_bytes : lm_head_bytes;
  for (const auto& L : layers) n = std::max(n, L.matrix_bytes);
  return n;
}

uint64_t ModelByteMap::resident_small_bytes() const {
  uint64_t n = head_small_bytes;
  for (const auto& L : layers) n += L.router_bytes + L.small_bytes;
  return n;
}

ModelByteMap ModelByteMap::from_tensors(const K3Config& c, const std::vector<TensorBytes>& tensors) {
  ModelByteMap m;
  m.hidden = c.hidden;
  m.vocab = c.vocab;
  m.tied_embeddings = c.tie_word_embeddings;
  m.experts = c.experts;
  m.top_k = c.top_k;
  m.moe_layers = c.moe_layers();
  m.layers.resize(c.layers);
  for (int l = 0; l < c.layers; ++l) {
    m.layers[l].layer = l;
    m.layers[l].mla = c.is_mla[l];
    m.layers[l].moe = c.is_moe(l);
    if (c.is_mla[l]) m.kv_bytes_per_token += uint64_t(c.mla_cache_width()) * 8;
    else
      m.fixed_state_bytes +=
          (uint64_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim + 3ull * (c.conv_kernel - 1) * c.kda_dim()) * 8;
  }
  uint64_t expert_total = 0, expert_flops_total = 0;
  for (const auto& t : tensors) {
    if (t.unit == kEmbedUnit) {
      m.embed_bytes += t.bytes;
      if (m.tied_embeddings) m.lm_head_flops_per_row += 2 * t.numel;
      continue;
    }
    if (t.unit == kLmHeadUnit) {
      m.lm_head_bytes += t.bytes;
      m.lm_head_flops_per_row += 2 * t.numel;
      continue;
    }
    if (t.unit == kHeadUnit) {
      m.head_small_bytes += t.bytes;
      continue;
    }
    LayerBytes& L = m.layers.at(size_t(t.unit));
    switch (t.role) {
      case TensorRole::Matrix:
        L.matrix_bytes += t.bytes;
        L.flops_per_row += 2 * t.numel;
        break;
      case TensorRole::Router:
        L.router_bytes += t.bytes;
        L.flops_per_row += 2 * t.numel;
        break;
      case TensorRole::Small:
        L.small_bytes += t.bytes;
        break;
      case TensorRole::Expert:
        expert_total += t.bytes;
        expert_flops_total += 2 * t.numel;  // an expert's numel counts multiply-adds (packed: 2 per byte)
        break;
    }
  }
  const uint64_t n_experts = uint64_t(c.experts) * m.moe_layers;
  if (n_experts > 0) {
    m.expert_bytes = expert_total / n_experts;
    m.expert_flops_per_row = expert_flops_total / n_experts;
  }
  return m;
}

ModelByteMap ModelByteMap::from_config(const K3Config& c) {
  return from_tensors(c, k3_text_tensors(c, "language_model."));
}

std::string text_prefix(const Checkpoint& ck) {
  return ck.find("language_model.model.embed_tokens.weight") ? "language_model." : "";
}

ModelByteMap ModelByteMap::from_checkpoint(const Checkpoint& ck, const K3Config& c) {
  auto tensors = k3_text_tensors(c, text_prefix(ck));
  for (auto& t : tensors) {
    const CatalogEntry* e = ck.find(t.name);
    if (!e)
      throw Error("tensor " + t.name + " is missing from " + ck.dir(),
                  "the checkpoint is incomplete or not a Kimi K3 checkpoint; run deltafin doctor");
    t.bytes = e->info->nbytes();
    if (t.role != TensorRole::Expert) t.numel = e->info->numel();
  }
  return from_tensors(c, tensors);
}

ModelByteMap ModelByteMap::for_model_root(const std::string& root, std::string* note) {
  const K3Config c = K3Config::load(root + "/config.json");
  std::unique_ptr<Checkpoint> ck;
  try {
    ck = Checkpoint::open(root);
  } catch (const Error& e) {
    if (note) *note = "sizes from config.json and the shipped dtypes (no shards in " + root + ")";
    return from_config(c);
  }
  return from_checkpoint(*ck, c);
}

}  // namespace deltafin::placement
