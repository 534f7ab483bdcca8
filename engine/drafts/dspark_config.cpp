#include "drafts/dspark_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace deltafin {

namespace {

// The block size of the published checkpoint, whose config does not spell it out.
constexpr int kDefaultBlockSize = 7;

struct Fields {
  const nlohmann::json& j;
  std::string origin;
  [[noreturn]] void fail(const std::string& k, const std::string& why) const {
    throw Error(origin + ": " + k + " " + why, "this is not a DSpark draft checkpoint Deltafin understands");
  }
  int integer(const std::string& k, int min = 1) const {
    auto it = j.find(k);
    if (it == j.end()) fail(k, "is missing");
    if (!it->is_number_integer()) fail(k, "must be an integer");
    const int64_t v = it->get<int64_t>();
    if (v < min || v > (1 << 30)) fail(k, "is " + std::to_string(v) + ", out of range");
    return static_cast<int>(v);
  }
  double number(const nlohmann::json& o, const std::string& k, double def) const {
    auto it = o.find(k);
    if (it == o.end() || it->is_null()) return def;
    if (!it->is_number()) fail(k, "must be a number");
    return it->get<double>();
  }
  bool boolean(const std::string& k, bool def) const {
    auto it = j.find(k);
    if (it == j.end()) return def;
    if (!it->is_boolean()) fail(k, "must be true or false");
    return it->get<bool>();
  }
};

}  // namespace

DSparkConfig DSparkConfig::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + " is not valid JSON: " + e.what(), "re-install the draft model");
  }
  if (!j.is_object()) throw Error(origin + " is not a JSON object", "re-install the draft model");
  Fields f{j, origin};
  DSparkConfig c;
  c.hidden = f.integer("hidden_size");
  c.intermediate = f.integer("intermediate_size");
  c.layers = f.integer("num_hidden_layers");
  c.vocab = f.integer("vocab_size");
  c.heads = f.integer("num_attention_heads");
  c.q_lora = f.integer("q_lora_rank");
  c.kv_lora = f.integer("kv_lora_rank");
  c.nope = f.integer("qk_nope_head_dim", 0);
  c.rope = f.integer("qk_rope_head_dim", 0);
  if (c.rope % 2) f.fail("qk_rope_head_dim", "must be even (pairs are rotated)");
  c.v_head = f.integer("v_head_dim");
  c.output_gate = f.boolean("mla_use_output_gate", false);
  c.rms_eps = static_cast<float>(f.number(j, "rms_norm_eps", 1e-5));
  c.target_hidden = j.contains("target_hidden_size") ? f.integer("target_hidden_size") : c.hidden;
  c.target_layers = j.contains("target_num_hidden_layers") ? f.integer("target_num_hidden_layers") : 0;
  c.mask_token_id = f.integer("mask_token_id", 0);
  c.markov_rank = f.integer("markov_rank");
  c.block_size = j.contains("block_size") ? f.integer("block_size") : kDefaultBlockSize;
  auto tl = j.find("target_layer_ids");
  if (tl == j.end() || !tl->is_array() || tl->empty()) f.fail("target_layer_ids", "must be a non-empty array");
  for (const auto& v : *tl) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) f.fail("target_layer_ids", "must hold layer numbers >= 0");
    c.target_layer_ids.push_back(v.get<int>());
  }
  if (c.mask_token_id >= c.vocab) f.fail("mask_token_id", "is outside the vocabulary");
  // Rope parameters: newer configs nest them in rope_parameters, older in rope_scaling.
  const nlohmann::json* rp = nullptr;
  for (const char* k : {"rope_parameters", "rope_scaling"})
    if (auto it = j.find(k); it != j.end() && it->is_object()) {
      rp = &*it;
      break;
    }
  c.yarn.theta = f.number(j, "rope_theta", 10000.0);
  if (rp) {
    c.yarn.theta = f.number(*rp, "rope_theta", c.yarn.theta);
    const std::string type = rp->value("rope_type", rp->value("type", std::string("default")));
    if (type == "yarn") {
      c.yarn.yarn = true;
      c.yarn.factor = f.number(*rp, "factor", 1.0);
      c.yarn.original_max = f.number(*rp, "original_max_position_embeddings", 0.0);
      c.yarn.beta_fast = f.number(*rp, "beta_fast", 32.0);
      c.yarn.beta_slow = f.number(*rp, "beta_slow", 1.0);
      c.yarn.mscale = f.number(*rp, "mscale", 1.0);
      c.yarn.mscale_all_dim = f.number(*rp, "mscale_all_dim", 0.0);
      if (c.yarn.factor < 1 || c.yarn.original_max <= 0)
        f.fail("rope_parameters", "has an invalid YaRN factor or original length");
    } else if (type != "default") {
      f.fail("rope_parameters.rope_type", "is '" + type + "'; Deltafin supports yarn and default");
    }
  }
  return c;
}

DSparkConfig DSparkConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path, "install the DSpark draft model or choose another --draft");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

}  // namespace deltafin
