#include "drafts/dspark_proposer.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "runtime/latent_attention.h"

namespace deltafin {

DSparkProposer::DSparkProposer(const DSparkModel& m)
    : m_(m),
      rope_(m.config().yarn, m.config().rope),
      scale_(static_cast<float>(rope_.softmax_scale(m.config().qk_head()))),
      cache_(m.config().layers) {}

bool DSparkProposer::begin(int64_t n_past) {
  if (n_past > n_ctx_) return false;  // context rows are missing for tokens it never saw
  truncate(n_past);
  return true;
}

void DSparkProposer::truncate(int64_t n) {
  if (n > n_ctx_) throw Error("DSpark context cannot grow by truncation");
  const size_t W = m_.config().cache_width();
  for (auto& c : cache_) c.resize(size_t(n) * W);
  n_ctx_ = n;
}

void DSparkProposer::on_commit(int64_t pos0, std::span<const int32_t> ids, const std::vector<const float*>& taps) {
  if (pos0 > n_ctx_)
    throw Error("DSpark missed the target's tokens " + std::to_string(n_ctx_) + ".." + std::to_string(pos0 - 1));
  truncate(pos0);
  add_context(static_cast<int>(ids.size()), taps);
}

void DSparkProposer::add_context(int n, const std::vector<const float*>& taps) {
  const DSparkConfig& c = m_.config();
  const int Ht = c.target_hidden, H = c.hidden, nt = static_cast<int>(c.target_layer_ids.size());
  const int R = c.kv_lora, P = c.rope, W = c.cache_width();
  if (static_cast<int>(taps.size()) != nt)
    throw Error("DSpark got " + std::to_string(taps.size()) + " taps, wants " + std::to_string(nt));
  if (n <= 0) return;
  std::vector<float> cat(size_t(n) * nt * Ht), ctx(size_t(n) * H), kv(size_t(n) * W);
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < nt; ++i) std::memcpy(&cat[(size_t(t) * nt + i) * Ht], taps[i] + size_t(t) * Ht, size_t(Ht) * 4);
  matmul(m_.context_proj, cat.data(), n, ctx.data());
  for (int t = 0; t < n; ++t) rmsnorm(&ctx[size_t(t) * H], m_.context_norm.data(), H, c.rms_eps, &ctx[size_t(t) * H]);
  for (int l = 0; l < c.layers; ++l) {
    const DSparkLayerWeights& w = m_.layers[l];
    matmul(w.kv_a_proj, ctx.data(), n, kv.data());
    auto& cache = cache_[l];
    cache.resize(size_t(n_ctx_ + n) * W);
    for (int t = 0; t < n; ++t) {
      const float* src = &kv[size_t(t) * W];
      float* dst = &cache[size_t(n_ctx_ + t) * W];
      rmsnorm(src, w.kv_a_norm.data(), R, c.rms_eps, dst);
      std::memcpy(dst + R, src + R, size_t(P) * 4);
      rope_.rotate(dst + R, n_ctx_ + t);
    }
  }
  n_ctx_ += n;
}

// Every block row attends to all context rows and to every block row (no causal
// mask inside the block), in the absorbed form over the latent cache.
void DSparkProposer::attention(int layer, const float* x, int T, int64_t pos0, float* out) {
  const DSparkConfig& c = m_.config();
  const DSparkLayerWeights& w = m_.layers[layer];
  const int nh = c.heads, R = c.kv_lora, P = c.rope, N = c.nope, Vd = c.v_head, qh = c.qk_head(), W = c.cache_width();
  std::vector<float> qa(size_t(T) * c.q_lora), q(size_t(T) * nh * qh), kv(size_t(T) * W), block(size_t(T) * W);
  matmul(w.q_a_proj, x, T, qa.data());
  for (int t = 0; t < T; ++t)
    rmsnorm(&qa[size_t(t) * c.q_lora], w.q_a_norm.data(), c.q_lora, c.rms_eps, &qa[size_t(t) * c.q_lora]);
  matmul(w.q_b_proj, qa.data(), T, q.data());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h) rope_.rotate(&q[(size_t(t) * nh + h) * qh + N], pos0 + t);
  matmul(w.kv_a_proj, x, T, kv.data());
  for (int t = 0; t < T; ++t) {
    rmsnorm(&kv[size_t(t) * W], w.kv_a_norm.data(), R, c.rms_eps, &block[size_t(t) * W]);
    std::memcpy(&block[size_t(t) * W + R], &kv[size_t(t) * W + R], size_t(P) * 4);
    rope_.rotate(&block[size_t(t) * W + R], pos0 + t);
  }
  const auto& cache = cache_[layer];
  const size_t n_ctx = static_cast<size_t>(n_ctx_), total = n_ctx + T;
  std::vector<float> attn(size_t(T) * nh * Vd);
  absorbed_mla_heads(
      w.kv_b_proj, q.data(), T, nh, N, P, R, Vd, scale_,
      [&](size_t r) { return r < n_ctx ? &cache[r * W] : &block[(r - n_ctx) * W]; }, [&](int) { return total; },
      attn.data());
  if (c.output_gate) {
    std::vector<float> g(size_t(T) * nh * Vd);
    matmul(w.g_proj, x, T, g.data());
    for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoidf(g[i]);
  }
  matmul(w.o_proj, attn.data(), T, out);
}

void DSparkProposer::block_logits(int32_t anchor, std::vector<float>& base) {
  const DSparkConfig& c = m_.config();
  const K3Weights& tw = m_.target().weights();
  const int T = c.block_size, H = c.hidden, I = c.intermediate;
  if (anchor < 0 || anchor >= c.vocab)
    throw Error("DSpark anchor id " + std::to_string(anchor) + " is outside the vocabulary");
  const size_t TH = size_t(T) * H;
  std::vector<float> h(TH), x(TH), a(TH), g(size_t(T) * I), u(size_t(T) * I);
  for (int t = 0; t < T; ++t) {
    const int32_t id = t == 0 ? anchor : c.mask_token_id;
    for (int j = 0; j < H; ++j) h[size_t(t) * H + j] = tw.embed.at(id, j);
  }
  for (int l = 0; l < c.layers; ++l) {
    const DSparkLayerWeights& w = m_.layers[l];
    for (int t = 0; t < T; ++t) rmsnorm(&h[size_t(t) * H], w.input_norm.data(), H, c.rms_eps, &x[size_t(t) * H]);
    attention(l, x.data(), T, n_ctx_, a.data());
    for (size_t i = 0; i < TH; ++i) h[i] += a[i];
    for (int t = 0; t < T; ++t) rmsnorm(&h[size_t(t) * H], w.post_attn_norm.data(), H, c.rms_eps, &x[size_t(t) * H]);
    matmul(w.gate, x.data(), T, g.data());
    matmul(w.up, x.data(), T, u.data());
    silu_inplace(g.data(), int64_t(T) * I);
    for (size_t i = 0; i < g.size(); ++i) g[i] *= u[i];
    matmul(w.down, g.data(), T, a.data());
    for (size_t i = 0; i < TH; ++i) h[i] += a[i];
  }
  for (int t = 0; t < T; ++t) rmsnorm(&h[size_t(t) * H], m_.final_norm.data(), H, c.rms_eps, &x[size_t(t) * H]);
  base.resize(size_t(T) * c.vocab);
  matmul(tw.lm_head, x.data(), T, base.data());
}

void DSparkProposer::markov(int32_t anchor, const std::vector<float>& base, std::vector<int32_t>& drafts) const {
  const DSparkConfig& c = m_.config();
  const int V = c.vocab, r = c.markov_rank, T = static_cast<int>(base.size() / V);
  drafts.clear();
  std::vector<float> w1(r), w2(size_t(V) * r), score(V);
  for (int64_t v = 0; v < V; ++v)
    for (int j = 0; j < r; ++j) w2[size_t(v) * r + j] = m_.markov_w2.at(v, j);
  int32_t prev = anchor;
  for (int k = 0; k < T; ++k) {
    for (int j = 0; j < r; ++j) w1[j] = m_.markov_w1.at(prev, j);
    const float* u = &base[size_t(k) * V];
    for (int v = 0; v < V; ++v) {
      float b = 0.f;
      for (int j = 0; j < r; ++j) b += w1[j] * w2[size_t(v) * r + j];
      score[v] = u[v] + b;
    }
    prev = static_cast<int32_t>(argmax(score.data(), V));
    drafts.push_back(prev);
  }
}

void DSparkProposer::propose(std::span<const int32_t>, int32_t pending, int max_k, std::vector<int32_t>& out) {
  block_logits(pending, base_);
  markov(pending, base_, out);
  if (static_cast<int>(out.size()) > max_k) out.resize(max_k);
}

}  // namespace deltafin
