// NoPE gated MLA over the absorbed latent cache (K3-SPEC.md section 3, "MLA").
// Each token stores [RMSNorm(latent) | shared key part]; per head the query is
// folded through kv_b's key rows, and the value rows are applied after the softmax.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/thread_pool.h"
#include "runtime/k3_model.h"
#include "runtime/latent_attention.h"
#include "runtime/ops.h"

namespace deltafin {

void K3Session::attention_mla(int layer, const float* x, int T, float* out) {
  const K3Config& c = m_.config();
  const MlaWeights& w = m_.weights().layers[layer].mla_w;
  auto& cache = st_.mla[layer].cache;
  const int nh = c.mla_heads, R = c.kv_lora_rank, P = c.qk_rope, N = c.qk_nope, Vd = c.v_head;
  const int qh = N + P, width = R + P, kvh = N + Vd;

  std::vector<float> qa(size_t(T) * c.q_lora_rank), q(size_t(T) * nh * qh), ckv(size_t(T) * width);
  matmul(w.q_a_proj, x, T, qa.data());
  for (int t = 0; t < T; ++t) {
    float* r = &qa[size_t(t) * c.q_lora_rank];
    rmsnorm(r, w.q_a_norm.data(), c.q_lora_rank, c.rms_eps, r);
  }
  matmul(w.q_b_proj, qa.data(), T, q.data());
  matmul(w.kv_a_proj, x, T, ckv.data());

  const size_t base = static_cast<size_t>(st_.n_past);
  cache.resize((base + T) * width);
  for (int t = 0; t < T; ++t) {
    const float* src = &ckv[size_t(t) * width];
    float* dst = &cache[(base + t) * width];
    rmsnorm(src, w.kv_a_norm.data(), R, c.rms_eps, dst);
    std::memcpy(dst + R, src + R, size_t(P) * 4);
  }

  std::vector<float> attn(size_t(T) * nh * Vd);
  const float scale = 1.f / std::sqrt(static_cast<float>(qh));
  // A job is one head for up to kRows consecutive rows of the pass, which read the cached rows
  // once for all of them; every (row, head) computes what it would alone.
  constexpr int kRows = 4;
  const int blocks = (T + kRows - 1) / kRows;
  ThreadPool::global().parallel_for(size_t(blocks) * nh, [&](size_t b, size_t e) {
    std::vector<float> qabs(size_t(kRows) * R), scratch, olat(size_t(kRows) * R);
    for (size_t job = b; job < e; ++job) {
      const int t0 = static_cast<int>(job / nh) * kRows, h = static_cast<int>(job % nh);
      const int nq = std::min(kRows, T - t0);
      size_t counts[kRows];
      for (int i = 0; i < nq; ++i) {
        const float* qn = &q[(size_t(t0 + i) * nh + h) * qh];
        float* qa = &qabs[size_t(i) * R];
        std::fill(qa, qa + R, 0.f);
        for (int n = 0; n < N; ++n) add_scaled_row(w.kv_b_proj, int64_t(h) * kvh + n, qn[n], qa);
        counts[i] = base + t0 + i + 1;
      }
      latent_attention(qabs.data(), R, &q[(size_t(t0) * nh + h) * qh + N], int64_t(nh) * qh, nq, R, P, scale, counts,
                       [&](size_t r) { return &cache[r * width]; }, scratch, olat.data());
      const Mat wv = row_slice(w.kv_b_proj, int64_t(h) * kvh + N, Vd);
      for (int i = 0; i < nq; ++i)
        matmul_rows(wv, 0, Vd, &olat[size_t(i) * R], R, 1, &attn[(size_t(t0 + i) * nh + h) * Vd], Vd);
    }
  });
  if (c.mla_output_gate) {
    std::vector<float> g(size_t(T) * nh * Vd);
    matmul(w.g_proj, x, T, g.data());
    for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoidf(g[i]);
  }
  matmul(w.o_proj, attn.data(), T, out);
}

}  // namespace deltafin
