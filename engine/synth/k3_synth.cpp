#include "synth/k3_synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/bf16.h"
#include "base/error.h"
#include "model/safetensors_writer.h"
#include "synth/synth_random.h"
#include "synth/synth_tokenizer.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {

using synth_random::hash_name;
using synth_random::normal;
using synth_random::splitmix;
using synth_random::uniform01;

enum class Init { Normal, NormWeight, Alog, Small, Conv };

struct Builder {
  const K3SynthSpec& spec;
  std::string prefix = "language_model.";
  // shard -> writer
  std::vector<SafetensorsWriter> shards;
  std::map<std::string, int> where;

  void bf16(int shard, const std::string& name, std::vector<int64_t> shape, Init init, float stddev = 0.f) {
    const uint64_t key = spec.seed * 0x100000001b3ull ^ hash_name(name);
    int64_t fan_in = shape.size() > 1 ? shape.back() : 1;
    if (stddev == 0.f) stddev = 1.f / std::sqrt(float(fan_in));
    shards[shard].add(prefix + name, DType::BF16, shape, [=](uint8_t* dst, uint64_t n, uint64_t off) {
      for (uint64_t b = 0; b < n; b += 2) {
        const uint64_t i = (off + b) / 2;
        float v = init == Init::NormWeight ? 1.f + 0.1f * normal(key, i) : stddev * normal(key, i);
        uint16_t h = f32_to_bf16(v);
        std::memcpy(dst + b, &h, 2);
      }
    });
    where[prefix + name] = shard;
  }
  void f32(int shard, const std::string& name, std::vector<int64_t> shape, Init init, int used = 0) {
    const uint64_t key = spec.seed * 0x100000001b3ull ^ hash_name(name);
    shards[shard].add(prefix + name, DType::F32, shape, [=](uint8_t* dst, uint64_t n, uint64_t off) {
      for (uint64_t b = 0; b < n; b += 4) {
        const uint64_t i = (off + b) / 4;
        float v = 0.f;
        switch (init) {
          case Init::Alog:
            v = int(i) < used ? std::log(1.f + 15.f * uniform01(key, i)) : 0.f;
            break;  // zero padding
          case Init::Conv:
            v = 0.5f * normal(key, i);
            break;
          case Init::Small:
            v = 0.1f * normal(key, i);
            break;
          case Init::NormWeight:
            v = 1.f + 0.1f * normal(key, i);
            break;
          case Init::Normal:
            v = normal(key, i);
            break;
        }
        std::memcpy(dst + b, &v, 4);
      }
    });
    where[prefix + name] = shard;
  }
  // MXFP4 codes uniform over all 16; E8M0 scales near 1/sqrt(fan_in)/2.
  void mxfp4(int shard, const std::string& base, int64_t out, int64_t in) {
    const uint64_t key = spec.seed * 0x100000001b3ull ^ hash_name(base);
    shards[shard].add(prefix + base + ".weight_packed", DType::U8, {out, in / 2},
                      [=](uint8_t* dst, uint64_t n, uint64_t off) {
                        for (uint64_t b = 0; b < n; b += 8) {
                          uint64_t r = splitmix(key ^ splitmix((off + b) / 8));
                          std::memcpy(dst + b, &r, std::min<uint64_t>(8, n - b));
                        }
                      });
    const int centre = 127 - static_cast<int>(std::lround(std::log2(std::sqrt(double(in))))) - 1;
    shards[shard].add(prefix + base + ".weight_scale", DType::U8, {out, in / 32},
                      [=](uint8_t* dst, uint64_t n, uint64_t off) {
                        for (uint64_t b = 0; b < n; ++b)
                          dst[b] = static_cast<uint8_t>(centre - int(splitmix(key ^ 0x5ca1e ^ (off + b)) % 2));
                      });
    where[prefix + base + ".weight_packed"] = shard;
    where[prefix + base + ".weight_scale"] = shard;
  }
};

std::vector<int> parse_list(const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, '+')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

uint64_t K3SynthSpec::expert_bytes() const {
  auto mat = [](uint64_t o, uint64_t i) { return o * i / 2 + o * i / 32; };
  return 2 * mat(moe_intermediate, latent) + mat(latent, moe_intermediate);
}

uint64_t K3SynthSpec::estimated_bytes() const {
  return uint64_t(layers - first_k_dense) * experts * expert_bytes() + uint64_t(vocab()) * hidden * 4 +
         uint64_t(layers) * hidden * hidden * 20;
}

std::vector<std::string> synth_preset_names() { return {"demo", "tiny-alt", "slice-2l", "slice-24g"}; }

K3SynthSpec synth_preset(const std::string& name) {
  K3SynthSpec s;
  s.name = name;
  if (name == "demo") return s;
  if (name == "tiny-alt") {
    // A different layout from k3-tiny and demo: MLA first, odd block size, no shared expert.
    s.hidden = 96;
    s.layers = 5;
    s.attn_res_block = 2;
    s.mla_layers = {1, 4};
    s.kda_heads = 3;
    s.kda_head_dim = 32;
    s.mla_heads = 3;
    s.q_lora = 48;
    s.kv_lora = 32;
    s.nope = 16;
    s.rope = 8;
    s.v_head = 24;
    s.first_k_dense = 2;
    s.dense_intermediate = 160;
    s.experts = 12;
    s.top_k = 3;
    s.shared_experts = 0;
    s.moe_intermediate = 96;
    s.latent = 64;
    s.bpe_ranks = 600;
    s.shards = 2;
    return s;
  }
  if (name.rfind("slice-", 0) == 0) {
    // Real per-layer K3 dimensions (hidden 7168, 17.55 MB experts, 16 active), fewer layers and experts.
    s.hidden = 7168;
    s.attn_res_block = 12;
    s.kda_heads = 96;
    s.kda_head_dim = 128;
    s.mla_heads = 96;
    s.q_lora = 1536;
    s.kv_lora = 512;
    s.nope = 128;
    s.rope = 64;
    s.v_head = 128;
    s.first_k_dense = 0;
    s.dense_intermediate = 0;
    s.top_k = 16;
    s.shared_experts = 2;
    s.moe_intermediate = 3072;
    s.latent = 3584;
    s.bpe_ranks = 4096;
    if (name == "slice-2l") {
      s.layers = 2;
      s.mla_layers = {2};
      s.experts = 64;
      s.shards = 2;
      return s;
    }
    if (name == "slice-24g") {
      s.layers = 2;
      s.mla_layers = {2};
      s.experts = 672;  // 2 x 672 x 17.55 MB = 23.6 GB of experts, twice a 12 GB cache budget
      s.shards = 3;
      return s;
    }
  }
  throw Error("unknown synth preset '" + name + "'", "choose one of: demo, tiny-alt, slice-2l, slice-24g");
}

void apply_synth_override(K3SynthSpec& s, const std::string& a) {
  auto eq = a.find('=');
  if (eq == std::string::npos) throw Error("override '" + a + "' is not field=value");
  const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
  std::map<std::string, int*> ints = {{"hidden", &s.hidden},
                                      {"layers", &s.layers},
                                      {"attn_res_block", &s.attn_res_block},
                                      {"kda_heads", &s.kda_heads},
                                      {"kda_head_dim", &s.kda_head_dim},
                                      {"mla_heads", &s.mla_heads},
                                      {"q_lora", &s.q_lora},
                                      {"kv_lora", &s.kv_lora},
                                      {"nope", &s.nope},
                                      {"rope", &s.rope},
                                      {"v_head", &s.v_head},
                                      {"first_k_dense", &s.first_k_dense},
                                      {"dense_intermediate", &s.dense_intermediate},
                                      {"experts", &s.experts},
                                      {"top_k", &s.top_k},
                                      {"shared_experts", &s.shared_experts},
                                      {"moe_intermediate", &s.moe_intermediate},
                                      {"latent", &s.latent},
                                      {"bpe_ranks", &s.bpe_ranks},
                                      {"shards", &s.shards}};
  try {
    if (k == "mla_layers") s.mla_layers = parse_list(v);
    else if (auto it = ints.find(k); it != ints.end()) *it->second = std::stoi(v);
    else throw Error("unknown synth field '" + k + "'");
  } catch (const std::invalid_argument&) {
    throw Error("synth override '" + a + "' has a value that is not a number");
  }
}

void write_k3_synth(const K3SynthSpec& s, const std::string& out, const SynthProgress& progress) {
  if (s.shards < 1) throw Error("synth: shards must be at least 1");
  if (s.bpe_ranks < 256) throw Error("synth: bpe_ranks must be at least 256 (every byte is a token)");
  // Checked before anything is written: a real-dimension slice takes minutes to write.
  if (s.experts > 0 && (s.top_k < 1 || s.top_k > s.experts))
    throw Error("synth: top_k " + std::to_string(s.top_k) + " must be between 1 and experts (" +
                    std::to_string(s.experts) + ")",
                "add --set top_k=N with N at most " + std::to_string(s.experts) + ", or more experts");
  fs::create_directories(out);
  const int nshards = s.shards;
  Builder b{s, "language_model.", {}, {}};
  b.shards.resize(nshards);
  const int H = s.hidden, C = s.kda_heads * s.kda_head_dim, V = s.vocab();
  std::vector<bool> is_mla(s.layers, false);
  for (int l : s.mla_layers) {
    if (l < 1 || l > s.layers)
      throw Error("synth: mla layer " + std::to_string(l) + " outside 1.." + std::to_string(s.layers));
    is_mla[l - 1] = true;
  }
  // Layers spread evenly over all but the last shard; the last holds embeddings and head.
  auto shard_of = [&](int l) { return nshards == 1 ? 0 : int(int64_t(l) * (nshards - 1) / s.layers); };
  for (int l = 0; l < s.layers; ++l) {
    const int sh = shard_of(l);
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.bf16(sh, p + "input_layernorm.weight", {H}, Init::NormWeight);
    b.bf16(sh, p + "post_attention_layernorm.weight", {H}, Init::NormWeight);
    for (const char* r : {"self_attention_res", "mlp_res"}) {
      b.bf16(sh, p + r + "_norm.weight", {H}, Init::NormWeight);
      b.bf16(sh, p + r + "_proj.weight", {1, H}, Init::Normal, 0.5f);
    }
    const std::string a = p + "self_attn.";
    if (is_mla[l]) {
      b.bf16(sh, a + "q_a_proj.weight", {s.q_lora, H}, Init::Normal);
      b.bf16(sh, a + "q_a_layernorm.weight", {s.q_lora}, Init::NormWeight);
      b.bf16(sh, a + "q_b_proj.weight", {int64_t(s.mla_heads) * (s.nope + s.rope), s.q_lora}, Init::Normal);
      b.bf16(sh, a + "kv_a_proj_with_mqa.weight", {s.kv_lora + s.rope, H}, Init::Normal);
      b.bf16(sh, a + "kv_a_layernorm.weight", {s.kv_lora}, Init::NormWeight);
      b.bf16(sh, a + "kv_b_proj.weight", {int64_t(s.mla_heads) * (s.nope + s.v_head), s.kv_lora}, Init::Normal);
      b.bf16(sh, a + "o_proj.weight", {H, int64_t(s.mla_heads) * s.v_head}, Init::Normal);
      b.bf16(sh, a + "g_proj.weight", {int64_t(s.mla_heads) * s.v_head, H}, Init::Normal);
    } else {
      for (const char* m : {"q_proj", "k_proj", "v_proj", "g_proj"})
        b.bf16(sh, a + m + ".weight", {C, H}, Init::Normal);
      b.bf16(sh, a + "o_proj.weight", {H, C}, Init::Normal);
      b.bf16(sh, a + "f_a_proj.weight", {s.kda_head_dim, H}, Init::Normal);
      b.bf16(sh, a + "f_b_proj.weight", {C, s.kda_head_dim}, Init::Normal);
      b.bf16(sh, a + "b_proj.weight", {s.kda_heads, H}, Init::Normal);
      for (const char* cv : {"q_conv1d", "k_conv1d", "v_conv1d"})
        b.f32(sh, a + cv + ".weight", {C, 1, s.conv_kernel}, Init::Conv);
      b.f32(sh, a + "A_log", {s.kda_head_dim}, Init::Alog, s.kda_heads);
      b.f32(sh, a + "dt_bias", {C}, Init::Small);
      b.f32(sh, a + "o_norm.weight", {s.kda_head_dim}, Init::NormWeight);
    }
    if (l < s.first_k_dense) {
      b.bf16(sh, p + "mlp.gate_proj.weight", {s.dense_intermediate, H}, Init::Normal);
      b.bf16(sh, p + "mlp.up_proj.weight", {s.dense_intermediate, H}, Init::Normal);
      b.bf16(sh, p + "mlp.down_proj.weight", {H, s.dense_intermediate}, Init::Normal);
      continue;
    }
    const std::string m = p + "block_sparse_moe.";
    b.bf16(sh, m + "gate.weight", {s.experts, H}, Init::Normal);
    b.f32(sh, m + "gate.e_score_correction_bias", {s.experts}, Init::Small);
    b.bf16(sh, m + "routed_expert_down_proj.weight", {s.latent, H}, Init::Normal);
    b.bf16(sh, m + "routed_expert_norm.weight", {s.latent}, Init::NormWeight);
    b.bf16(sh, m + "routed_expert_up_proj.weight", {H, s.latent}, Init::Normal);
    if (s.shared_experts > 0) {
      const int I = s.shared_experts * s.moe_intermediate;
      b.bf16(sh, m + "shared_experts.gate_proj.weight", {I, H}, Init::Normal);
      b.bf16(sh, m + "shared_experts.up_proj.weight", {I, H}, Init::Normal);
      b.bf16(sh, m + "shared_experts.down_proj.weight", {H, I}, Init::Normal);
    }
    // Expert names in lexicographic order put each expert's six tensors back to back.
    std::vector<std::string> enames;
    for (int e = 0; e < s.experts; ++e) enames.push_back(std::to_string(e));
    std::sort(enames.begin(), enames.end(),
              [](const std::string& x, const std::string& y) { return x + "." < y + "."; });
    for (const auto& e : enames) {
      const std::string base = m + "experts." + e + ".";
      b.mxfp4(sh, base + "w1", s.moe_intermediate, s.latent);
      b.mxfp4(sh, base + "w2", s.latent, s.moe_intermediate);
      b.mxfp4(sh, base + "w3", s.moe_intermediate, s.latent);
    }
  }
  const int last = nshards - 1;
  b.bf16(last, "lm_head.weight", {V, H}, Init::Normal);
  b.bf16(last, "model.embed_tokens.weight", {V, H}, Init::Normal, 1.f);
  b.bf16(last, "model.norm.weight", {H}, Init::NormWeight);
  b.bf16(last, "model.output_attn_res_norm.weight", {H}, Init::NormWeight);
  b.bf16(last, "model.output_attn_res_proj.weight", {1, H}, Init::Normal, 0.5f);
  // A vision tensor like the real checkpoint's, which a text-only engine must skip.
  b.prefix = "";
  b.bf16(last, "vision_tower.patch_embed.proj.weight", {16, 3, 14, 14}, Init::Normal);

  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total = 0;
  char fname[64];
  for (int i = 0; i < nshards; ++i) {
    std::snprintf(fname, sizeof fname, "model-%05d-of-%06d.safetensors", i + 1, nshards);
    if (progress.on_file) progress.on_file(fname, 0, b.shards[i].data_bytes());
    b.shards[i].write(out + "/" + fname);
    total += b.shards[i].data_bytes();
    if (progress.on_file) progress.on_file(fname, b.shards[i].data_bytes(), b.shards[i].data_bytes());
    auto names = b.shards[i].names();
    std::sort(names.begin(), names.end());
    for (const auto& n : names) weight_map[n] = fname;
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  std::ofstream(out + "/model.safetensors.index.json") << index.dump(2) << "\n";

  const int n = s.bpe_ranks;
  std::vector<int> kda_layers, full_layers;
  for (int l = 1; l <= s.layers; ++l) (is_mla[l - 1] ? full_layers : kda_layers).push_back(l);
  nlohmann::ordered_json quant = {
      {"config_groups",
       {{"group_0",
         {{"format", "mxfp4-pack-quantized"},
          {"input_activations", nullptr},
          {"output_activations", nullptr},
          {"targets", {"Linear"}},
          {"weights",
           {{"group_size", 32},
            {"num_bits", 4},
            {"strategy", "group"},
            {"symmetric", true},
            {"type", "float"},
            {"scale_dtype", "torch.uint8"}}}}}}},
      {"format", "mxfp4-pack-quantized"},
      {"ignore",
       {"re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*", "re:.*lm_head.*",
        "re:.*vision_tower.*", "re:.*mm_projector.*"}},
      {"quant_method", "compressed-tensors"},
      {"quantization_status", "compressed"}};
  nlohmann::ordered_json text = {{"model_type", "kimi_linear"},
                                 {"architectures", {"KimiLinearForCausalLM"}},
                                 {"hidden_size", H},
                                 {"num_hidden_layers", s.layers},
                                 {"vocab_size", V},
                                 {"max_position_embeddings", 1048576},
                                 {"rms_norm_eps", 1e-5},
                                 {"hidden_act", "situ"},
                                 {"activation_situ_beta", 4.0},
                                 {"activation_situ_linear_beta", 25.0},
                                 {"attn_res_block_size", s.attn_res_block},
                                 {"num_attention_heads", s.mla_heads},
                                 {"num_key_value_heads", s.mla_heads},
                                 {"q_lora_rank", s.q_lora},
                                 {"kv_lora_rank", s.kv_lora},
                                 {"qk_nope_head_dim", s.nope},
                                 {"qk_rope_head_dim", s.rope},
                                 {"v_head_dim", s.v_head},
                                 {"mla_use_nope", true},
                                 {"mla_use_output_gate", true},
                                 {"first_k_dense_replace", s.first_k_dense},
                                 {"intermediate_size", s.dense_intermediate},
                                 {"num_experts", s.experts},
                                 {"num_experts_per_token", s.top_k},
                                 {"num_shared_experts", s.shared_experts},
                                 {"moe_intermediate_size", s.moe_intermediate},
                                 {"routed_expert_hidden_size", s.latent},
                                 {"latent_moe_use_norm", true},
                                 {"moe_layer_freq", 1},
                                 {"moe_router_activation_func", "sigmoid"},
                                 {"moe_renormalize", true},
                                 {"routed_scaling_factor", 1.0},
                                 {"num_expert_group", 1},
                                 {"topk_group", 1},
                                 {"topk_method", "noaux_tc"},
                                 {"num_nextn_predict_layers", 0},
                                 {"tie_word_embeddings", false},
                                 {"bos_token_id", n},
                                 {"eos_token_id", n + 2},
                                 {"pad_token_id", n + 255},
                                 {"linear_attn_config",
                                  {{"num_heads", s.kda_heads},
                                   {"head_dim", s.kda_head_dim},
                                   {"short_conv_kernel_size", s.conv_kernel},
                                   {"use_full_rank_gate", true},
                                   {"gate_lower_bound", -5.0},
                                   {"kda_layers", kda_layers},
                                   {"full_attn_layers", full_layers}}},
                                 {"quantization_config", quant}};
  nlohmann::ordered_json cfg = {{"architectures", {"KimiK3ForConditionalGeneration"}},
                                {"model_type", "kimi_k3"},
                                {"bos_token_id", n},
                                {"eos_token_id", n + 2},
                                {"pad_token_id", n + 255},
                                {"tie_word_embeddings", false},
                                {"deltafin_synth",
                                 {{"preset", s.name},
                                  {"seed", s.seed},
                                  {"note", "random weights generated by deltafin synth: not a trained model"}}},
                                {"text_config", text},
                                {"vision_config", {{"mm_hidden_size", 16}}}};
  std::ofstream(out + "/config.json") << cfg.dump(2) << "\n";
  std::ofstream(out + "/generation_config.json") << R"({"temperature": 1.0, "top_p": 1.0})"
                                                 << "\n";
  write_synth_tokenizer(out, s.bpe_ranks);
}

}  // namespace deltafin
