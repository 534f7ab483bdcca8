#include "drafts/dspark_model.h"

#include "base/error.h"
#include "drafts/draft_tensor_binder.h"

namespace deltafin {

std::unique_ptr<DSparkModel> DSparkModel::load(const std::string& root, const K3Model& target) {
  auto m = std::unique_ptr<DSparkModel>(new DSparkModel(target));
  m->root_ = root;
  m->cfg_ = DSparkConfig::load(root + "/config.json");
  const DSparkConfig& c = m->cfg_;
  const K3Config& t = target.config();
  const std::string fix = "use the DSpark checkpoint made for this K3 model";
  if (c.hidden != t.hidden || c.target_hidden != t.hidden)
    throw Error("DSpark in " + root + " has hidden size " + std::to_string(c.hidden) + " but the target has " +
                    std::to_string(t.hidden),
                fix);
  if (c.vocab != t.vocab)
    throw Error(
        "DSpark vocabulary " + std::to_string(c.vocab) + " differs from the target's " + std::to_string(t.vocab), fix);
  if (c.target_layers != 0 && c.target_layers != t.layers)
    throw Error("DSpark was trained on a " + std::to_string(c.target_layers) + "-layer target, this one has " +
                    std::to_string(t.layers),
                fix);
  for (int l : c.target_layer_ids)
    if (l >= t.layers) throw Error("DSpark taps target layer " + std::to_string(l) + " the target does not have", fix);
  m->ck_ = Checkpoint::open(root);
  DraftTensorBinder b(*m->ck_, "", "DSpark");
  const int H = c.hidden, nt = static_cast<int>(c.target_layer_ids.size());
  m->context_proj = b.mat("context_proj.weight", H, int64_t(nt) * c.target_hidden);
  m->context_norm = b.vec("context_norm.weight", H);
  m->final_norm = b.vec("final_norm.weight", H);
  m->markov_w1 = b.mat("markov_head.markov_w1.weight", c.vocab, c.markov_rank);
  m->markov_w2 = b.mat("markov_head.markov_w2.weight", c.vocab, c.markov_rank);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    DSparkLayerWeights w;
    w.input_norm = b.vec(p + "input_layernorm.weight", H);
    w.post_attn_norm = b.vec(p + "post_attention_layernorm.weight", H);
    const std::string a = p + "self_attn.";
    w.q_a_proj = b.mat(a + "q_a_proj.weight", c.q_lora, H);
    w.q_a_norm = b.vec(a + "q_a_layernorm.weight", c.q_lora);
    w.q_b_proj = b.mat(a + "q_b_proj.weight", int64_t(c.heads) * c.qk_head(), c.q_lora);
    w.kv_a_proj = b.mat(a + "kv_a_proj_with_mqa.weight", c.cache_width(), H);
    w.kv_a_norm = b.vec(a + "kv_a_layernorm.weight", c.kv_lora);
    w.kv_b_proj = b.mat(a + "kv_b_proj.weight", int64_t(c.heads) * (c.nope + c.v_head), c.kv_lora);
    w.o_proj = b.mat(a + "o_proj.weight", H, int64_t(c.heads) * c.v_head);
    if (c.output_gate) w.g_proj = b.mat(a + "g_proj.weight", int64_t(c.heads) * c.v_head, H);
    w.gate = b.mat(p + "mlp.gate_proj.weight", c.intermediate, H);
    w.up = b.mat(p + "mlp.up_proj.weight", c.intermediate, H);
    w.down = b.mat(p + "mlp.down_proj.weight", H, c.intermediate);
    m->layers.push_back(std::move(w));
  }
  m->bytes_ = b.bytes();
  return m;
}

}  // namespace deltafin
