#include "model/k3_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"

namespace deltafin {

using nlohmann::json;

namespace {

struct Reader {
  const json& obj;
  std::string path;  // e.g. "text_config"
  std::string origin;

  std::string field(const std::string& k) const { return path.empty() ? k : path + "." + k; }
  [[noreturn]] void fail(const std::string& k, const std::string& why) const {
    throw Error(origin + ": " + field(k) + " " + why,
                "this checkpoint is not a Kimi K3 model Deltafin can run exactly");
  }
  const json& need(const std::string& k) const {
    auto it = obj.find(k);
    if (it == obj.end()) fail(k, "is missing");
    return *it;
  }
  int integer(const std::string& k, int min = 1) const {
    const json& v = need(k);
    if (!v.is_number_integer()) fail(k, "must be an integer");
    int64_t x = v.get<int64_t>();
    if (x < min || x > (1 << 30)) fail(k, "is " + std::to_string(x) + ", out of range");
    return static_cast<int>(x);
  }
  int64_t integer_or(const std::string& k, int64_t def) const {
    auto it = obj.find(k);
    if (it == obj.end() || it->is_null()) return def;
    if (!it->is_number_integer()) fail(k, "must be an integer");
    return it->get<int64_t>();
  }
  float number(const std::string& k) const { return float(number64(k)); }
  double number64(const std::string& k) const {
    const json& v = need(k);
    if (!v.is_number()) fail(k, "must be a number");
    return v.get<double>();
  }
  float number_or(const std::string& k, float def) const { return obj.contains(k) ? number(k) : def; }
  bool boolean_or(const std::string& k, bool def) const {
    auto it = obj.find(k);
    if (it == obj.end()) return def;
    if (!it->is_boolean()) fail(k, "must be true or false");
    return it->get<bool>();
  }
  std::string string(const std::string& k) const {
    const json& v = need(k);
    if (!v.is_string()) fail(k, "must be a string");
    return v.get<std::string>();
  }
  Reader sub(const std::string& k) const {
    const json& v = need(k);
    if (!v.is_object()) fail(k, "must be an object");
    return Reader{v, field(k), origin};
  }
};

void require_eq(const Reader& r, const std::string& k, const std::string& got, const std::string& want) {
  if (got != want) r.fail(k, "is '" + got + "'; Deltafin computes only '" + want + "'");
}

}  // namespace

uint64_t K3Config::expert_bytes() const {
  auto mat = [](uint64_t out, uint64_t in) { return out * in / 2 + out * in / 32; };
  return 2 * mat(moe_intermediate, latent) + mat(latent, moe_intermediate);
}

K3Config K3Config::parse(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(origin + " is not valid JSON: " + e.what(), "re-download config.json");
  }
  if (!root.is_object()) throw Error(origin + " is not a JSON object", "re-download config.json");
  Reader r{root, "", origin};
  K3Config c;
  if (root.contains("model_type")) require_eq(r, "model_type", r.string("model_type"), "kimi_k3");
  c.bos_token_id = r.integer_or("bos_token_id", -1);
  c.eos_token_id = r.integer_or("eos_token_id", -1);
  c.pad_token_id = r.integer_or("pad_token_id", -1);

  if (auto ds = root.find("deltafin_synth"); ds != root.end() && ds->is_object())
    c.synth_preset = ds->value("preset", std::string("unknown"));

  Reader t = r.sub("text_config");
  c.tie_word_embeddings = t.boolean_or("tie_word_embeddings", r.boolean_or("tie_word_embeddings", false));
  c.hidden = t.integer("hidden_size");
  c.layers = t.integer("num_hidden_layers");
  c.vocab = t.integer("vocab_size");
  c.rms_eps = t.number64("rms_norm_eps");
  if (!(c.rms_eps > 0)) t.fail("rms_norm_eps", "must be positive");
  require_eq(t, "hidden_act", t.string("hidden_act"), "situ");
  c.situ_beta = t.number("activation_situ_beta");
  c.situ_linear_beta = t.number("activation_situ_linear_beta");
  if (!(c.situ_beta > 0.f)) t.fail("activation_situ_beta", "must be positive");
  if (!(c.situ_linear_beta > 0.f)) t.fail("activation_situ_linear_beta", "must be positive");
  c.attn_res_block = t.integer("attn_res_block_size");

  c.mla_heads = t.integer("num_attention_heads");
  c.q_lora_rank = t.integer("q_lora_rank");
  c.kv_lora_rank = t.integer("kv_lora_rank");
  c.qk_nope = t.integer("qk_nope_head_dim");
  c.qk_rope = t.integer("qk_rope_head_dim", 0);
  c.v_head = t.integer("v_head_dim");
  if (!t.boolean_or("mla_use_nope", false))
    t.fail("mla_use_nope", "must be true: the K3 target's MLA applies no rotary embedding");
  c.mla_output_gate = t.boolean_or("mla_use_output_gate", false);
  if (t.obj.contains("num_key_value_heads") && t.integer("num_key_value_heads") != c.mla_heads)
    t.fail("num_key_value_heads", "must equal num_attention_heads for MLA");

  Reader la = t.sub("linear_attn_config");
  c.kda_heads = la.integer("num_heads");
  c.kda_head_dim = la.integer("head_dim");
  c.conv_kernel = la.integer("short_conv_kernel_size");
  if (!la.boolean_or("use_full_rank_gate", false))
    la.fail("use_full_rank_gate", "must be true (K3's full-rank KDA gate)");
  c.gate_lower_bound = la.number_or("gate_lower_bound", -5.f);
  if (!(c.gate_lower_bound < 0.f)) la.fail("gate_lower_bound", "must be negative");
  c.is_mla.assign(c.layers, false);
  std::set<int> seen;
  auto read_layers = [&](const char* key, bool mla) {
    const json& v = la.need(key);
    if (!v.is_array()) la.fail(key, "must be a list of 1-based layer numbers");
    for (const auto& e : v) {
      if (!e.is_number_integer()) la.fail(key, "must hold integers");
      int l = e.get<int>();
      if (l < 1 || l > c.layers)
        la.fail(key, "names layer " + std::to_string(l) + " outside 1.." + std::to_string(c.layers));
      if (!seen.insert(l).second) la.fail(key, "names layer " + std::to_string(l) + " twice or in both lists");
      c.is_mla[l - 1] = mla;
    }
  };
  read_layers("full_attn_layers", true);
  read_layers("kda_layers", false);
  if (static_cast<int>(seen.size()) != c.layers)
    la.fail("kda_layers", "and full_attn_layers together cover " + std::to_string(seen.size()) + " of " +
                              std::to_string(c.layers) + " layers");

  c.first_k_dense = t.integer("first_k_dense_replace", 0);
  if (c.first_k_dense > c.layers) t.fail("first_k_dense_replace", "exceeds num_hidden_layers");
  c.dense_intermediate = c.first_k_dense > 0 ? t.integer("intermediate_size") : 0;
  if (t.integer_or("moe_layer_freq", 1) != 1) t.fail("moe_layer_freq", "must be 1");
  c.experts = t.integer("num_experts");
  c.top_k = t.integer("num_experts_per_token");
  if (c.top_k > c.experts) t.fail("num_experts_per_token", "is larger than num_experts");
  c.shared_experts = t.integer("num_shared_experts", 0);
  c.moe_intermediate = t.integer("moe_intermediate_size");
  c.latent = t.integer("routed_expert_hidden_size");
  if (c.latent % 32 != 0 || c.moe_intermediate % 32 != 0)
    t.fail("routed_expert_hidden_size", "and moe_intermediate_size must be multiples of the MXFP4 group (32)");
  c.latent_norm = t.boolean_or("latent_moe_use_norm", true);
  require_eq(t, "moe_router_activation_func", t.string("moe_router_activation_func"), "sigmoid");
  c.renormalize = t.boolean_or("moe_renormalize", true);
  c.routed_scaling = t.number_or("routed_scaling_factor", 1.f);
  if (t.integer_or("num_expert_group", 1) != 1) t.fail("num_expert_group", "must be 1 (K3 routes without groups)");
  if (t.integer_or("topk_group", 1) != 1) t.fail("topk_group", "must be 1 (K3 routes without groups)");

  Reader q = t.sub("quantization_config");
  require_eq(q, "format", q.string("format"), "mxfp4-pack-quantized");
  Reader groups = q.sub("config_groups");
  if (groups.obj.empty()) groups.fail("", "is empty");
  for (auto it = groups.obj.begin(); it != groups.obj.end(); ++it) {
    Reader g = groups.sub(it.key());
    if (g.obj.contains("format")) require_eq(g, "format", g.string("format"), "mxfp4-pack-quantized");
    Reader w = g.sub("weights");
    if (w.integer("num_bits") != 4) w.fail("num_bits", "must be 4 (MXFP4)");
    if (w.integer("group_size") != 32) w.fail("group_size", "must be 32 (MXFP4)");
    require_eq(w, "type", w.string("type"), "float");
  }

  if (c.mla_heads <= 0 || c.kda_heads <= 0) t.fail("num_attention_heads", "must be positive");
  if (c.bos_token_id >= c.vocab || c.eos_token_id >= c.vocab) r.fail("eos_token_id", "is outside the vocabulary");

  if (claims_k3_release(c)) {
    // The released model: hold it to every published number (K3-SPEC.md section 2).
    struct Want {
      const char* field;
      double got, want;
    };
    const Want wants[] = {
        {"text_config.vocab_size", double(c.vocab), 163840},
        {"text_config.rms_norm_eps", c.rms_eps, 1e-5},
        {"text_config.activation_situ_beta", c.situ_beta, 4.0},
        {"text_config.activation_situ_linear_beta", c.situ_linear_beta, 25.0},
        {"text_config.attn_res_block_size", double(c.attn_res_block), 12},
        {"text_config.num_attention_heads", double(c.mla_heads), 96},
        {"text_config.q_lora_rank", double(c.q_lora_rank), 1536},
        {"text_config.kv_lora_rank", double(c.kv_lora_rank), 512},
        {"text_config.qk_nope_head_dim", double(c.qk_nope), 128},
        {"text_config.qk_rope_head_dim", double(c.qk_rope), 64},
        {"text_config.v_head_dim", double(c.v_head), 128},
        {"text_config.first_k_dense_replace", double(c.first_k_dense), 1},
        {"text_config.intermediate_size", double(c.dense_intermediate), 33792},
        {"text_config.num_experts", double(c.experts), 896},
        {"text_config.num_experts_per_token", double(c.top_k), 16},
        {"text_config.num_shared_experts", double(c.shared_experts), 2},
        {"text_config.moe_intermediate_size", double(c.moe_intermediate), 3072},
        {"text_config.routed_expert_hidden_size", double(c.latent), 3584},
        {"text_config.routed_scaling_factor", c.routed_scaling, 1.0},
        {"text_config.linear_attn_config.num_heads", double(c.kda_heads), 96},
        {"text_config.linear_attn_config.head_dim", double(c.kda_head_dim), 128},
        {"text_config.linear_attn_config.short_conv_kernel_size", double(c.conv_kernel), 4},
        {"text_config.linear_attn_config.gate_lower_bound", c.gate_lower_bound, -5.0},
        {"bos_token_id", double(c.bos_token_id), 163584},
        {"eos_token_id", double(c.eos_token_id), 163586},
    };
    for (const auto& w : wants)
      if (std::fabs(w.got - w.want) > 1e-6 * std::fabs(w.want))  // float fields are read as float
        throw Error(origin + ": " + w.field + " is " + std::to_string(w.got) + " but the released Kimi K3 has " +
                        std::to_string(w.want),
                    "the checkpoint's config does not match the published model; re-download config.json");
    int mla = 0;
    for (int l = 0; l < c.layers; ++l) {
      bool want = (l + 1) % 4 == 0 || l + 1 == 93;
      if (c.is_mla[l] != want)
        throw Error(
            origin + ": text_config.linear_attn_config.full_attn_layers differs from the released Kimi K3 at layer " +
                std::to_string(l + 1),
            "re-download config.json");
      mla += want;
    }
    if (mla != 24) throw Error(origin + ": expected 24 MLA layers in the released Kimi K3");
    if (!c.mla_output_gate || !c.latent_norm || !c.renormalize || c.tie_word_embeddings)
      throw Error(origin +
                      ": mla_use_output_gate, latent_moe_use_norm, moe_renormalize or tie_word_embeddings differs "
                      "from the released Kimi K3",
                  "re-download config.json");
  }
  return c;
}

K3Config K3Config::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path, "point --model-root at a model folder with a config.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

bool claims_k3_release(const K3Config& c) { return c.hidden == 7168 && c.layers == 93; }

}  // namespace deltafin
