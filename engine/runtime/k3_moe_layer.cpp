// LatentMoE with the sigmoid + bias router, shared experts, and the dense MLP
// of the first layers (K3-SPEC.md section 3, "MoE").
#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/k3_model.h"
#include "runtime/moe_router.h"
#include "runtime/ops.h"

namespace deltafin {

void K3Session::dense_mlp(const DenseMlpWeights& w, const double* x, int T, double* out) {
  const K3Config& c = m_.config();
  const int64_t I = w.gate.rows;
  std::vector<double> g(size_t(T) * I), u(size_t(T) * I);
  matmul_group({{&w.gate, g.data()}, {&w.up, u.data()}}, x, T);
  situ_glu(g.data(), u.data(), int64_t(T) * I, c.situ_beta, c.situ_linear_beta, g.data());
  matmul(w.down, g.data(), T, out);
}

void routed_expert_group(const K3Config& c, std::span<const ExpertView> views, std::span<const size_t> row0,
                         const double* xs, double* g, double* u, double* d) {
  const int Z = c.latent, I = c.moe_intermediate;
  std::vector<Mxfp4Product> products;
  for (size_t e = 0; e < views.size(); ++e) {
    const ExpertView& v = views[e];
    const int n = static_cast<int>(row0[e + 1] - row0[e]);
    products.push_back({v.w1_packed, v.w1_scale, I, Z, xs + row0[e] * Z, n, g + row0[e] * I});
    products.push_back({v.w3_packed, v.w3_scale, I, Z, xs + row0[e] * Z, n, u + row0[e] * I});
  }
  matmul_mxfp4_many(products);
  situ_glu(g, u, int64_t(row0[views.size()]) * I, c.situ_beta, c.situ_linear_beta, g);
  products.clear();
  for (size_t e = 0; e < views.size(); ++e) {
    const ExpertView& v = views[e];
    products.push_back(
        {v.w2_packed, v.w2_scale, Z, I, g + row0[e] * I, static_cast<int>(row0[e + 1] - row0[e]), d + row0[e] * Z});
  }
  matmul_mxfp4_many(products);
}

void K3Session::predict_experts(int layer, const double* x, int T) {
  const K3Config& c = m_.config();
  const MoeWeights& w = m_.weights().layers[layer].moe_w;
  const int E = c.experts, k = c.top_k;
  std::vector<double> logits(size_t(T) * E);
  std::vector<double> key(E);          // the router's own fp64 keys, so a guess is what the router will choose
  std::vector<int> order, best(E, k);  // best: the expert's best place in a row's top-k (k: none)
  matmul(w.router, x, T, logits.data());
  for (int t = 0; t < T; ++t) {
    for (int e = 0; e < E; ++e) key[e] = sigmoid64(logits[size_t(t) * E + e]) + double(w.router_bias[e]);
    top_k_by_key(key.data(), E, k, order);
    for (int j = 0; j < k; ++j) best[order[j]] = std::min(best[order[j]], j);
  }
  // Most confident first: every row's first choice, then every row's second, ...
  std::vector<int> guess;
  for (int r = 0; r < k; ++r)
    for (int e = 0; e < E; ++e)
      if (best[e] == r) guess.push_back(e);
  m_.experts().prefetch(layer, guess);
}

void K3Session::moe(int layer, const double* x, int T, double* out, ForwardTrace* trace) {
  const K3Config& c = m_.config();
  const MoeWeights& w = cur_->moe_w;
  const int E = c.experts, k = c.top_k, Z = c.latent, I = c.moe_intermediate, H = c.hidden;

  // Router: choose by sigmoid score + correction bias; weight by the plain score.
  std::vector<double> logits(size_t(T) * E);
  matmul(w.router, x, T, logits.data());
  std::vector<int32_t> chosen(size_t(T) * k);
  std::vector<double> weight(size_t(T) * k);
  RouterChoice choice;
  for (int t = 0; t < T; ++t) {
    route_token(&logits[size_t(t) * E], w.router_bias.data(), E, k, c.renormalize, c.routed_scaling, choice);
    std::copy(choice.ids.begin(), choice.ids.end(), &chosen[size_t(t) * k]);
    std::copy(choice.weights64.begin(), choice.weights64.end(), &weight[size_t(t) * k]);
  }
  if (trace) {
    trace->topk_ids.emplace_back(chosen.begin(), chosen.end());
    trace->topk_weights.emplace_back(weight.begin(), weight.end());  // rounded to fp32 for the trace
  }

  // Each distinct expert is fetched once and run over every row that chose it; asked for as soon as
  // the router has chosen, so that the misses load under the matrices below.
  std::vector<int> uni(chosen.begin(), chosen.end());
  std::sort(uni.begin(), uni.end());
  uni.erase(std::unique(uni.begin(), uni.end()), uni.end());
  auto batch = m_.experts().request(layer, uni);
  // Router lookahead: the next MoE layers' routers on this layer's input predict their experts;
  // their reads queue behind this layer's demand reads, the nearer layer first.
  for (int d = 1; d <= m_.experts().prefetch_layers(); ++d) {
    if (layer + d >= c.layers || !c.is_moe(layer + d)) break;
    predict_experts(layer + d, x, T);
  }

  // The latent down-projection and the shared experts' gate and up read the same input: one
  // hand-over to the threads (the same rows and kernels as one call each, the same bits).
  std::vector<double> z(size_t(T) * Z), sg, su;
  if (w.has_shared) {
    sg.resize(size_t(T) * size_t(w.shared.gate.rows));
    su.resize(size_t(T) * size_t(w.shared.up.rows));
    matmul_group({{&w.latent_down, z.data()}, {&w.shared.gate, sg.data()}, {&w.shared.up, su.data()}}, x, T);
  } else {
    matmul(w.latent_down, x, T, z.data());
  }

  std::vector<double> slot_out(size_t(T) * k * Z);
  // Experts arrive in readiness order (hits first), every ready one at once: a group's gates and
  // ups take one spread over the threads, its activations one, its downs one (a hand-over to the
  // threads costs tens of microseconds on virtual machines, an expert's matrix ~55 us at 16
  // threads). Each row's sum below is in a fixed order, whatever the grouping.
  std::vector<std::pair<int, ExpertView>> group;
  std::vector<ExpertView> views;
  std::vector<std::vector<int>> users;  // per expert of the group: indices t*k+slot
  std::vector<size_t> row0;             // per expert of the group: its first row in xs, g, u, d
  std::vector<double> xs, g, u, d;
  for (size_t done = 0; done < uni.size(); done += group.size()) {
    group.clear();
    batch->next_ready(group, static_cast<int>(uni.size() - done));
    const size_t G = group.size();
    views.clear();
    users.assign(G, {});
    row0.assign(G + 1, 0);
    for (size_t e = 0; e < G; ++e) {
      views.push_back(group[e].second);
      for (int i = 0; i < T * k; ++i)
        if (chosen[i] == uni[size_t(group[e].first)]) users[e].push_back(i);
      row0[e + 1] = row0[e] + users[e].size();
    }
    const size_t R = row0[G];
    xs.resize(R * Z);
    g.resize(R * I);
    u.resize(R * I);
    d.resize(R * Z);
    for (size_t e = 0; e < G; ++e)
      for (size_t r = 0; r < users[e].size(); ++r)
        std::memcpy(&xs[(row0[e] + r) * Z], &z[size_t(users[e][r] / k) * Z], size_t(Z) * sizeof(double));
    routed_expert_group(c, views, row0, xs.data(), g.data(), u.data(), d.data());
    for (size_t e = 0; e < G; ++e)
      for (size_t r = 0; r < users[e].size(); ++r)
        std::memcpy(&slot_out[size_t(users[e][r]) * Z], &d[(row0[e] + r) * Z], size_t(Z) * sizeof(double));
  }

  // The weighted sum of a row's experts in fp64, normalised from the unrounded sum.
  std::vector<double> y(size_t(T) * Z);
  std::vector<double> acc(Z);
  for (int t = 0; t < T; ++t) {
    double* yt = &y[size_t(t) * Z];
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int i = 0; i < k; ++i) {
      const double wt = weight[size_t(t) * k + i];
      const double* so = &slot_out[(size_t(t) * k + i) * Z];
      for (int j = 0; j < Z; ++j) acc[j] += wt * so[j];
    }
    if (c.latent_norm) rmsnorm(acc.data(), w.latent_norm.data(), Z, c.rms_eps, yt);
    else std::copy(acc.begin(), acc.end(), yt);
  }
  matmul(w.latent_up, y.data(), T, out);
  if (w.has_shared) {
    std::vector<double> sh(size_t(T) * H);
    situ_glu(sg.data(), su.data(), int64_t(sg.size()), c.situ_beta, c.situ_linear_beta, sg.data());
    matmul(w.shared.down, sg.data(), T, sh.data());
    for (size_t i = 0; i < sh.size(); ++i) out[i] += sh[i];
  }
}

}  // namespace deltafin
