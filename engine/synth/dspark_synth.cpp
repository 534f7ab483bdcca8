#include "synth/dspark_synth.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/bf16.h"
#include "base/error.h"
#include "model/safetensors_writer.h"
#include "synth/synth_random.h"

namespace deltafin {

namespace {

using synth_random::hash_name;
using synth_random::normal;
using synth_random::splitmix;

void add_bf16(SafetensorsWriter& w, uint64_t seed, const std::string& name, std::vector<int64_t> shape, bool norm,
              float stddev = 0.f) {
  const uint64_t key = seed * 0x100000001b3ull ^ hash_name(name);
  if (stddev == 0.f) stddev = 1.f / std::sqrt(float(shape.back()));
  w.add(name, DType::BF16, shape, [=](uint8_t* dst, uint64_t n, uint64_t off) {
    for (uint64_t b = 0; b < n; b += 2) {
      const uint64_t i = (off + b) / 2;
      const uint16_t h = f32_to_bf16(norm ? 1.f + 0.1f * normal(key, i) : stddev * normal(key, i));
      std::memcpy(dst + b, &h, 2);
    }
  });
}

}  // namespace

std::vector<std::string> dspark_synth_preset_names() { return {"dspark-demo", "dspark-tiny-alt"}; }
bool is_dspark_preset(const std::string& name) { return name.rfind("dspark-", 0) == 0; }

DSparkSynthSpec dspark_spec_for(const K3SynthSpec& t, const std::string& name) {
  DSparkSynthSpec s;
  s.name = name;
  s.target_preset = t.name;
  s.hidden = t.hidden;
  s.target_layers = t.layers;
  s.vocab = t.vocab();
  s.bpe_ranks = t.bpe_ranks;
  s.heads = std::max(1, t.mla_heads);
  s.q_lora = t.q_lora;
  s.kv_lora = t.kv_lora;
  s.nope = t.nope;
  s.rope = t.rope;
  s.v_head = t.v_head;
  s.intermediate = t.hidden * 3 / 2;
  // Three taps spread over the target like the real [2, 23, 47, 71, 89] over 93 layers.
  for (int i = 0; i < std::min(3, t.layers); ++i) s.target_layer_ids.push_back((2 * i + 1) * t.layers / 6);
  s.seed = t.seed;
  return s;
}

DSparkSynthSpec dspark_synth_preset(const std::string& name) {
  if (name == "dspark-demo") return dspark_spec_for(synth_preset("demo"), name);
  if (name == "dspark-tiny-alt") return dspark_spec_for(synth_preset("tiny-alt"), name);
  throw Error("unknown DSpark synth preset '" + name + "'", "choose one of: dspark-demo, dspark-tiny-alt");
}

void write_dspark_synth(const DSparkSynthSpec& s, const std::string& out) {
  if (s.vocab < 4 || s.target_layer_ids.empty() || s.rope % 2)
    throw Error("synth: DSpark spec '" + s.name + "' is incomplete", "use a dspark-* preset");
  std::filesystem::create_directories(out);
  SafetensorsWriter w;
  const int H = s.hidden, nt = static_cast<int>(s.target_layer_ids.size());
  const uint64_t seed = s.seed ^ 0xd5a4c;  // differs from the target's so no tensor repeats it
  add_bf16(w, seed, "context_proj.weight", {H, int64_t(nt) * H}, false);
  add_bf16(w, seed, "context_norm.weight", {H}, true);
  // Deliberately unrelated to the target's embedding: a drafter must never read it.
  add_bf16(w, seed, "embed_tokens.weight", {s.vocab, H}, false, 1.f);
  add_bf16(w, seed, "final_norm.weight", {H}, true);
  add_bf16(w, seed, "markov_head.markov_w1.weight", {s.vocab, s.markov_rank}, false, 0.5f);
  add_bf16(w, seed, "markov_head.markov_w2.weight", {s.vocab, s.markov_rank}, false, 0.5f);
  add_bf16(w, seed, "confidence_head.proj.weight", {1, H + s.markov_rank}, false);
  add_bf16(w, seed, "confidence_head.proj.bias", {1}, false, 0.1f);
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add_bf16(w, seed, p + "input_layernorm.weight", {H}, true);
    add_bf16(w, seed, p + "post_attention_layernorm.weight", {H}, true);
    add_bf16(w, seed, p + "self_attn.q_a_proj.weight", {s.q_lora, H}, false);
    add_bf16(w, seed, p + "self_attn.q_a_layernorm.weight", {s.q_lora}, true);
    add_bf16(w, seed, p + "self_attn.q_b_proj.weight", {int64_t(s.heads) * (s.nope + s.rope), s.q_lora}, false);
    add_bf16(w, seed, p + "self_attn.kv_a_proj_with_mqa.weight", {s.kv_lora + s.rope, H}, false);
    add_bf16(w, seed, p + "self_attn.kv_a_layernorm.weight", {s.kv_lora}, true);
    add_bf16(w, seed, p + "self_attn.kv_b_proj.weight", {int64_t(s.heads) * (s.nope + s.v_head), s.kv_lora}, false);
    add_bf16(w, seed, p + "self_attn.o_proj.weight", {H, int64_t(s.heads) * s.v_head}, false);
    add_bf16(w, seed, p + "mlp.gate_proj.weight", {s.intermediate, H}, false);
    add_bf16(w, seed, p + "mlp.up_proj.weight", {s.intermediate, H}, false);
    add_bf16(w, seed, p + "mlp.down_proj.weight", {H, s.intermediate}, false);
  }
  w.write(out + "/model.safetensors");
  const int n = s.bpe_ranks;
  nlohmann::ordered_json cfg = {{"architectures", {"K3DSparkModel"}},
                                {"model_type", "k3_dspark"},
                                {"torch_dtype", "bfloat16"},
                                {"hidden_size", H},
                                {"intermediate_size", s.intermediate},
                                {"num_hidden_layers", s.layers},
                                {"vocab_size", s.vocab},
                                {"draft_vocab_size", s.vocab},
                                {"num_attention_heads", s.heads},
                                {"num_key_value_heads", s.heads},
                                {"q_lora_rank", s.q_lora},
                                {"kv_lora_rank", s.kv_lora},
                                {"qk_nope_head_dim", s.nope},
                                {"qk_rope_head_dim", s.rope},
                                {"v_head_dim", s.v_head},
                                {"mla_use_nope", false},
                                {"mla_use_output_gate", false},
                                {"rms_norm_eps", 1e-5},
                                {"max_position_embeddings", 1048576},
                                {"rope_theta", 50000.0},
                                {"rope_parameters",
                                 {{"rope_type", "yarn"},
                                  {"factor", 32.0},
                                  {"original_max_position_embeddings", 32768},
                                  {"rope_theta", 50000.0},
                                  {"beta_fast", 32},
                                  {"beta_slow", 1},
                                  {"mscale", 1.0},
                                  {"mscale_all_dim", 1.0}}},
                                {"num_target_layers", nt},
                                {"target_hidden_size", H},
                                {"target_num_hidden_layers", s.target_layers},
                                {"target_layer_ids", s.target_layer_ids},
                                {"mask_token_id", s.vocab - 3},
                                {"bos_token_id", n},
                                {"eos_token_id", n + 2},
                                {"pad_token_id", s.vocab - 1},
                                {"markov_rank", s.markov_rank},
                                {"markov_head_type", "vanilla"},
                                {"enable_confidence_head", true},
                                {"confidence_head_with_markov", true},
                                {"tie_word_embeddings", false},
                                {"deltafin_synth",
                                 {{"preset", s.name},
                                  {"target_preset", s.target_preset},
                                  {"seed", s.seed},
                                  {"note", "random weights generated by deltafin synth: not a trained drafter"}}}};
  std::ofstream(out + "/config.json") << cfg.dump(2) << "\n";
}

}  // namespace deltafin
