#include "drafts/qwen3_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/thread_pool.h"
#include "drafts/draft_tensor_binder.h"

namespace deltafin {

Qwen3Config Qwen3Config::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + " is not valid JSON: " + e.what(), "re-install the Qwen3 draft model (deltafin setup-qwen)");
  }
  auto fail = [&](const std::string& k, const std::string& why) -> void {
    throw Error(origin + ": " + k + " " + why, "this is not a Qwen3 checkpoint Deltafin can draft with");
  };
  auto integer = [&](const std::string& k) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (1 << 30))
      fail(k, "is missing or not a positive integer");
    return it->get<int>();
  };
  Qwen3Config c;
  if (j.value("model_type", std::string()) != "qwen3") fail("model_type", "is not 'qwen3'");
  c.hidden = integer("hidden_size");
  c.layers = integer("num_hidden_layers");
  c.heads = integer("num_attention_heads");
  c.kv_heads = integer("num_key_value_heads");
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? integer("head_dim") : c.hidden / c.heads;
  c.intermediate = integer("intermediate_size");
  c.vocab = integer("vocab_size");
  if (c.heads % c.kv_heads) fail("num_key_value_heads", "must divide num_attention_heads");
  if (c.head_dim % 2) fail("head_dim", "must be even");
  c.rms_eps = j.value("rms_norm_eps", 1e-6f);
  c.tied = j.value("tie_word_embeddings", true);
  // The theta may sit at the root or inside rope_parameters (newer transformers).
  if (auto it = j.find("rope_theta"); it != j.end() && it->is_number()) c.rope_theta = it->get<double>();
  if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) {
    const std::string type = it->value("rope_type", std::string("default"));
    if (type != "default")
      fail("rope_parameters.rope_type", "is '" + type + "'; Deltafin's Qwen3 supports the default RoPE");
    if (auto t = it->find("rope_theta"); t != it->end() && t->is_number()) c.rope_theta = t->get<double>();
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    fail("rope_scaling", "is set; Deltafin's Qwen3 supports none");
  return c;
}

Qwen3Config Qwen3Config::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path, "install the Qwen3 draft model with deltafin setup-qwen");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::unique_ptr<Qwen3Model> Qwen3Model::load(const std::string& root) {
  auto m = std::make_unique<Qwen3Model>();
  m->root_ = root;
  m->cfg_ = Qwen3Config::load(root + "/config.json");
  m->ck_ = Checkpoint::open(root);
  const Qwen3Config& c = m->cfg_;
  DraftTensorBinder b(*m->ck_, "", "Qwen3");
  const int H = c.hidden, hd = c.head_dim;
  m->embed = b.mat("model.embed_tokens.weight", c.vocab, H);
  m->lm_head = c.tied ? m->embed : b.mat("lm_head.weight", c.vocab, H);
  m->final_norm = b.vec("model.norm.weight", H);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Qwen3LayerWeights w;
    w.input_norm = b.vec(p + "input_layernorm.weight", H);
    w.post_attn_norm = b.vec(p + "post_attention_layernorm.weight", H);
    w.q_proj = b.mat(p + "self_attn.q_proj.weight", int64_t(c.heads) * hd, H);
    w.k_proj = b.mat(p + "self_attn.k_proj.weight", int64_t(c.kv_heads) * hd, H);
    w.v_proj = b.mat(p + "self_attn.v_proj.weight", int64_t(c.kv_heads) * hd, H);
    w.o_proj = b.mat(p + "self_attn.o_proj.weight", H, int64_t(c.heads) * hd);
    w.q_norm = b.vec(p + "self_attn.q_norm.weight", hd);
    w.k_norm = b.vec(p + "self_attn.k_norm.weight", hd);
    w.gate = b.mat(p + "mlp.gate_proj.weight", c.intermediate, H);
    w.up = b.mat(p + "mlp.up_proj.weight", c.intermediate, H);
    w.down = b.mat(p + "mlp.down_proj.weight", H, c.intermediate);
    m->layers.push_back(std::move(w));
  }
  m->bytes_ = b.bytes();
  return m;
}

Qwen3Session::Qwen3Session(const Qwen3Model& m) : m_(m), k_(m.config().layers), v_(m.config().layers) {}

void Qwen3Session::truncate(int64_t n) {
  if (n < 0 || n > n_past_)
    throw Error("Qwen3Session::truncate(" + std::to_string(n) + ") outside 0.." + std::to_string(n_past_));
  const size_t W = size_t(m_.config().kv_heads) * m_.config().head_dim;
  for (auto& k : k_) k.resize(size_t(n) * W);
  for (auto& v : v_) v.resize(size_t(n) * W);
  n_past_ = n;
}

namespace {
// Rotate-half RoPE: element i pairs with i + d/2.
void rope_half(float* x, int d, int64_t pos, double theta) {
  const int h = d / 2;
  for (int i = 0; i < h; ++i) {
    const double a = double(pos) * std::pow(theta, -2.0 * i / d);
    const float c = static_cast<float>(std::cos(a)), s = static_cast<float>(std::sin(a));
    const float x0 = x[i], x1 = x[i + h];
    x[i] = x0 * c - x1 * s;
    x[i + h] = x1 * c + x0 * s;
  }
}
}  // namespace

void Qwen3Session::forward(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits) {
  const Qwen3Config& c = m_.config();
  const int T = static_cast<int>(ids.size()), H = c.hidden, hd = c.head_dim, nh = c.heads, nkv = c.kv_heads;
  if (T == 0) throw Error("Qwen3Session::forward with no tokens");
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab) throw Error("Qwen3 token id " + std::to_string(id) + " is outside the vocabulary");
  const size_t TH = size_t(T) * H, QW = size_t(nh) * hd, KW = size_t(nkv) * hd;
  std::vector<float> x(TH), r(TH), q(T * QW), k(T * KW), v(T * KW), att(T * QW), o(TH);
  std::vector<float> g(size_t(T) * c.intermediate), u(size_t(T) * c.intermediate);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) x[size_t(t) * H + j] = m_.embed.at(ids[t], j);
  const float scale = 1.f / std::sqrt(static_cast<float>(hd));
  for (int l = 0; l < c.layers; ++l) {
    const Qwen3LayerWeights& w = m_.layers[l];
    for (int t = 0; t < T; ++t) rmsnorm(&x[size_t(t) * H], w.input_norm.data(), H, c.rms_eps, &r[size_t(t) * H]);
    matmul(w.q_proj, r.data(), T, q.data());
    matmul(w.k_proj, r.data(), T, k.data());
    matmul(w.v_proj, r.data(), T, v.data());
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < nh; ++h) {
        float* qh = &q[t * QW + size_t(h) * hd];
        rmsnorm(qh, w.q_norm.data(), hd, c.rms_eps, qh);
        rope_half(qh, hd, n_past_ + t, c.rope_theta);
      }
      for (int h = 0; h < nkv; ++h) {
        float* kh = &k[t * KW + size_t(h) * hd];
        rmsnorm(kh, w.k_norm.data(), hd, c.rms_eps, kh);
        rope_half(kh, hd, n_past_ + t, c.rope_theta);
      }
    }
    auto& kc = k_[l];
    auto& vc = v_[l];
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());
    const int group = nh / nkv;
    ThreadPool::global().parallel_for(size_t(T) * nh, [&](size_t b, size_t e) {
      std::vector<float> p;
      for (size_t job = b; job < e; ++job) {
        const int t = static_cast<int>(job / nh), h = static_cast<int>(job % nh), kvh = h / group;
        const float* qh = &q[t * QW + size_t(h) * hd];
        const size_t ctx = size_t(n_past_ + t + 1);
        p.resize(ctx);
        float mx = -INFINITY;
        for (size_t s = 0; s < ctx; ++s) {
          const float* ks = &kc[s * KW + size_t(kvh) * hd];
          float a = 0.f;
          for (int i = 0; i < hd; ++i) a += qh[i] * ks[i];
          p[s] = a * scale;
          mx = std::max(mx, p[s]);
        }
        float sum = 0.f;
        for (size_t s = 0; s < ctx; ++s) sum += (p[s] = std::exp(p[s] - mx));
        float* out = &att[t * QW + size_t(h) * hd];
        std::fill(out, out + hd, 0.f);
        for (size_t s = 0; s < ctx; ++s) {
          const float pw = p[s] / sum;
          const float* vs = &vc[s * KW + size_t(kvh) * hd];
          for (int i = 0; i < hd; ++i) out[i] += pw * vs[i];
        }
      }
    });
    matmul(w.o_proj, att.data(), T, o.data());
    for (size_t i = 0; i < TH; ++i) x[i] += o[i];
    for (int t = 0; t < T; ++t) rmsnorm(&x[size_t(t) * H], w.post_attn_norm.data(), H, c.rms_eps, &r[size_t(t) * H]);
    matmul(w.gate, r.data(), T, g.data());
    matmul(w.up, r.data(), T, u.data());
    silu_inplace(g.data(), int64_t(g.size()));
    for (size_t i = 0; i < g.size(); ++i) g[i] *= u[i];
    matmul(w.down, g.data(), T, o.data());
    for (size_t i = 0; i < TH; ++i) x[i] += o[i];
  }
  n_past_ += T;
  const int first = all_logits ? 0 : T - 1, rows = T - first;
  for (int t = 0; t < rows; ++t)
    rmsnorm(&x[size_t(first + t) * H], m_.final_norm.data(), H, c.rms_eps, &r[size_t(t) * H]);
  logits.resize(size_t(rows) * c.vocab);
  matmul(m_.lm_head, r.data(), rows, logits.data());
}

}  // namespace deltafin
