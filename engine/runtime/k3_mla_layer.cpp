// NoPE gated MLA over the absorbed latent cache (K3-SPEC.md section 3, "MLA").
// Each token stores [RMSNorm(latent) | shared key part]; per head the query is
// folded through kv_b's key rows, and the value rows are applied after the softmax.
#include <cmath>
#include <cstring>

#include "runtime/k3_model.h"
#include "runtime/latent_attention.h"
#include "runtime/ops.h"

namespace deltafin {

void K3Session::attention_mla(int layer, const double* x, int T, double* out) {
  const K3Config& c = m_.config();
  const MlaWeights& w = cur_->mla_w;
  auto& cache = st_.mla[layer].cache;
  const int nh = c.mla_heads, R = c.kv_lora_rank, P = c.qk_rope, N = c.qk_nope, Vd = c.v_head;
  const int qh = N + P, width = R + P;

  std::vector<double> qa(size_t(T) * c.q_lora_rank), q(size_t(T) * nh * qh), ckv(size_t(T) * width);
  matmul_group({{&w.q_a_proj, qa.data()}, {&w.kv_a_proj, ckv.data()}}, x, T);
  for (int t = 0; t < T; ++t) {
    double* r = &qa[size_t(t) * c.q_lora_rank];
    rmsnorm(r, w.q_a_norm.data(), c.q_lora_rank, c.rms_eps, r);
  }
  matmul(w.q_b_proj, qa.data(), T, q.data());

  const size_t base = static_cast<size_t>(st_.n_past);
  cache.resize((base + T) * width);
  for (int t = 0; t < T; ++t) {
    const double* src = &ckv[size_t(t) * width];
    double* dst = &cache[(base + t) * width];
    rmsnorm(src, w.kv_a_norm.data(), R, c.rms_eps, dst);
    std::memcpy(dst + R, src + R, size_t(P) * sizeof(double));
  }

  std::vector<double> attn(size_t(T) * nh * Vd);
  const double scale = 1.0 / std::sqrt(double(qh));
  absorbed_mla_heads(
      w.kv_b_proj, q.data(), T, nh, N, P, R, Vd, scale, [&](size_t r) { return &cache[r * width]; },
      [&](int t) { return base + size_t(t) + 1; }, attn.data());
  if (c.mla_output_gate) {
    std::vector<double> g(size_t(T) * nh * Vd);
    matmul(w.g_proj, x, T, g.data());
    for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoid64(g[i]);
  }
  matmul(w.o_proj, attn.data(), T, out);
}

}  // namespace deltafin
