#include "runtime/k3_weights.h"

#include <cstring>
#include <sstream>

#include "base/error.h"
#include "model/checkpoint.h"

namespace deltafin {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

struct Binder {
  const Checkpoint& ck;
  std::string prefix;  // "language_model." or ""
  uint64_t spine_bytes = 0;

  const CatalogEntry& need(const std::string& name) const {
    const CatalogEntry* e = ck.find(prefix + name);
    if (!e)
      throw Error("tensor " + prefix + name + " is missing from " + ck.dir(),
                  "the checkpoint is incomplete or not a Kimi K3 checkpoint; run deltafin doctor");
    return *e;
  }
  bool has(const std::string& name) const { return ck.find(prefix + name) != nullptr; }

  void check_shape(const std::string& name, const CatalogEntry& e, const std::vector<int64_t>& want) const {
    if (e.info->shape != want)
      throw Error("tensor " + prefix + name + " has shape " + shape_str(e.info->shape) + " but the config implies " +
                      shape_str(want),
                  "config.json and the weights do not belong together; re-download the checkpoint");
  }

  Mat mat(const std::string& name, int64_t rows, int64_t cols) {
    const CatalogEntry& e = need(name);
    if (e.info->dtype != DType::BF16 && e.info->dtype != DType::F32)
      throw Error("tensor " + prefix + name + " is " + dtype_name(e.info->dtype) + "; Deltafin reads BF16 or F32 here",
                  "this checkpoint is not in the shipped K3 format");
    check_shape(name, e, {rows, cols});
    spine_bytes += e.info->nbytes();
    return Mat{ck.data(e), e.info->dtype, rows, cols};
  }

  // Small tensors are widened to fp32 once (exact for BF16 and F32).
  std::vector<float> vec(const std::string& name, const std::vector<int64_t>& shape) {
    const CatalogEntry& e = need(name);
    check_shape(name, e, shape);
    return widen(name, e);
  }
  std::vector<float> vec_min(const std::string& name, uint64_t min_numel) {
    const CatalogEntry& e = need(name);
    if (e.info->numel() < min_numel)
      throw Error("tensor " + prefix + name + " has " + std::to_string(e.info->numel()) + " values, needs at least " +
                  std::to_string(min_numel));
    return widen(name, e);
  }
  std::vector<float> widen(const std::string& name, const CatalogEntry& e) {
    const uint8_t* p = ck.data(e);
    std::vector<float> out(e.info->numel());
    if (e.info->dtype == DType::F32) {
      std::memcpy(out.data(), p, out.size() * 4);
    } else if (e.info->dtype == DType::BF16) {
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        uint32_t bits = static_cast<uint32_t>(v) << 16;
        std::memcpy(&out[i], &bits, 4);
      }
    } else {
      throw Error("tensor " + prefix + name + " is " + dtype_name(e.info->dtype) + "; expected BF16 or F32");
    }
    spine_bytes += e.info->nbytes();
    return out;
  }

  AttnResWeights attn_res(const std::string& base, int hidden) {
    AttnResWeights r;
    auto norm = vec(base + "_norm.weight", {hidden});
    auto proj = vec(base + "_proj.weight", {1, hidden});
    r.w.resize(hidden);
    for (int i = 0; i < hidden; ++i) r.w[i] = norm[i] * proj[i];
    return r;
  }

  DenseMlpWeights mlp(const std::string& base, int hidden, int inter) {
    return DenseMlpWeights{mat(base + ".gate_proj.weight", inter, hidden), mat(base + ".up_proj.weight", inter, hidden),
                           mat(base + ".down_proj.weight", hidden, inter)};
  }
};

}  // namespace

K3Weights K3Weights::bind(const Checkpoint& ck, const K3Config& c) {
  Binder b{ck, ck.find("language_model.model.embed_tokens.weight") ? "language_model." : ""};
  K3Weights w;
  const int H = c.hidden;
  w.embed = b.mat("model.embed_tokens.weight", c.vocab, H);
  w.lm_head = c.tie_word_embeddings ? w.embed : b.mat("lm_head.weight", c.vocab, H);
  w.final_norm = b.vec("model.norm.weight", {H});
  w.output_res = b.attn_res("model.output_attn_res", H);
  w.layers.resize(c.layers);
  w.experts.resize(c.layers);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.mla = c.is_mla[l];
    L.moe = c.is_moe(l);
    L.input_norm = b.vec(p + "input_layernorm.weight", {H});
    L.post_attn_norm = b.vec(p + "post_attention_layernorm.weight", {H});
    L.attn_res = b.attn_res(p + "self_attention_res", H);
    L.mlp_res = b.attn_res(p + "mlp_res", H);
    const std::string a = p + "self_attn.";
    if (L.mla) {
      const int nh = c.mla_heads;
      MlaWeights& m = L.mla_w;
      m.q_a_proj = b.mat(a + "q_a_proj.weight", c.q_lora_rank, H);
      m.q_a_norm = b.vec(a + "q_a_layernorm.weight", {c.q_lora_rank});
      m.q_b_proj = b.mat(a + "q_b_proj.weight", int64_t(nh) * c.mla_qk_head(), c.q_lora_rank);
      m.kv_a_proj = b.mat(a + "kv_a_proj_with_mqa.weight", c.kv_lora_rank + c.qk_rope, H);
      m.kv_a_norm = b.vec(a + "kv_a_layernorm.weight", {c.kv_lora_rank});
      m.kv_b_proj = b.mat(a + "kv_b_proj.weight", int64_t(nh) * (c.qk_nope + c.v_head), c.kv_lora_rank);
      m.o_proj = b.mat(a + "o_proj.weight", H, int64_t(nh) * c.v_head);
      if (c.mla_output_gate) m.g_proj = b.mat(a + "g_proj.weight", int64_t(nh) * c.v_head, H);
    } else {
      const int C = c.kda_dim(), K = c.conv_kernel;
      KdaWeights& k = L.kda;
      k.q_proj = b.mat(a + "q_proj.weight", C, H);
      k.k_proj = b.mat(a + "k_proj.weight", C, H);
      k.v_proj = b.mat(a + "v_proj.weight", C, H);
      k.g_proj = b.mat(a + "g_proj.weight", C, H);
      k.o_proj = b.mat(a + "o_proj.weight", H, C);
      const CatalogEntry& fa = b.need(a + "f_a_proj.weight");
      if (fa.info->shape.size() != 2) throw Error("tensor " + b.prefix + a + "f_a_proj.weight must be a matrix");
      const int64_t rank = fa.info->shape[0];
      k.f_a = b.mat(a + "f_a_proj.weight", rank, H);
      k.f_b = b.mat(a + "f_b_proj.weight", C, rank);
      k.b_proj = b.mat(a + "b_proj.weight", c.kda_heads, H);
      k.q_conv = b.vec(a + "q_conv1d.weight", {C, 1, K});
      k.k_conv = b.vec(a + "k_conv1d.weight", {C, 1, K});
      k.v_conv = b.vec(a + "v_conv1d.weight", {C, 1, K});
      k.a_log = b.vec_min(a + "A_log", c.kda_heads);
      k.dt_bias = b.vec(a + "dt_bias", {C});
      k.o_norm = b.vec(a + "o_norm.weight", {c.kda_head_dim});
    }
    if (!L.moe) {
      L.dense = b.mlp(p + "mlp", H, c.dense_intermediate);
      continue;
    }
    const std::string m = p + "block_sparse_moe.";
    MoeWeights& mw = L.moe_w;
    mw.router = b.mat(m + "gate.weight", c.experts, H);
    mw.router_bias = b.vec(m + "gate.e_score_correction_bias", {c.experts});
    mw.latent_down = b.mat(m + "routed_expert_down_proj.weight", c.latent, H);
    mw.latent_up = b.mat(m + "routed_expert_up_proj.weight", H, c.latent);
    if (c.latent_norm) mw.latent_norm = b.vec(m + "routed_expert_norm.weight", {c.latent});
    if (c.shared_experts > 0) {
      mw.shared = b.mlp(m + "shared_experts", H, int64_t(c.shared_experts) * c.moe_intermediate);
      mw.has_shared = true;
    }
    // Routed experts: located, shape-checked, never read here.
    auto& locs = w.experts[l];
    locs.resize(c.experts);
    const int64_t I = c.moe_intermediate, Z = c.latent;
    const char* parts[6] = {"w1.weight_packed", "w1.weight_scale",  "w2.weight_packed",
                            "w2.weight_scale",  "w3.weight_packed", "w3.weight_scale"};
    const std::vector<int64_t> shapes[6] = {{I, Z / 2}, {I, Z / 32}, {Z, I / 2}, {Z, I / 32}, {I, Z / 2}, {I, Z / 32}};
    for (int e = 0; e < c.experts; ++e) {
      ExpertLocation& L2 = locs[e];
      for (int k = 0; k < 6; ++k) {
        const std::string name = m + "experts." + std::to_string(e) + "." + parts[k];
        const CatalogEntry& ce = b.need(name);
        if (ce.info->dtype != DType::U8)
          throw Error("tensor " + b.prefix + name + " is " + dtype_name(ce.info->dtype) +
                          "; routed experts must be MXFP4 (U8 packed codes and E8M0 scales)",
                      "only the shipped mxfp4-pack-quantized experts are supported");
        b.check_shape(name, ce, shapes[k]);
        if (k == 0) L2.shard = ce.shard;
        if (ce.shard != L2.shard) L2.contiguous = false;
        L2.part_offset[k] = ce.file_offset();
        L2.part_bytes[k] = ce.info->nbytes();
        if (k > 0 && L2.part_offset[k] != L2.part_offset[k - 1] + L2.part_bytes[k - 1]) L2.contiguous = false;
      }
      L2.offset = L2.part_offset[0];
      L2.bytes = 0;
      for (auto n : L2.part_bytes) L2.bytes += n;
    }
  }
  w.spine_bytes = b.spine_bytes;
  return w;
}

}  // namespace deltafin
