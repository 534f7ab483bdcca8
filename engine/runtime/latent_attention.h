#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "cpu/gemm.h"

namespace deltafin {

// Query heads over absorbed MLA rows [R latent | P shared key part]: scores
// (q_abs . latent + q_rope . rope) * scale, softmax in row order, then the
// probability-weighted sum of the latents into olat[R]. row_at(s) gives row s.
// Shared by the K3 target and DSpark so both reduce in exactly this order.
// Every sum is a plain loop in index order with each product rounded before it is added; the
// kernels (kernels/cpu: dot_rows, axpy) keep exactly that while running many positions at once.
//
// nq queries of one head at once (the rows of one pass): query i uses qabs + i * ld_abs,
// qrope + i * ld_rope, sees the first counts[i] rows (nondecreasing) and writes olat + i * R.
// Each query's result is the one it gets alone; sharing only saves loading the rows again.
template <class RowAt>
void latent_attention(const float* qabs, int64_t ld_abs, const float* qrope, int64_t ld_rope, int nq, int R, int P,
                      float scale, const size_t* counts, RowAt row_at, std::vector<float>& scratch, float* olat) {
  const kernels::KernelTable& k = kernels::active();
  const size_t total = counts[nq - 1], common = counts[0];
  thread_local std::vector<const float*> rows;
  rows.resize(total);
  for (size_t s = 0; s < total; ++s) rows[s] = row_at(s);
  scratch.resize(2 * size_t(nq) * total);
  float* score = scratch.data();                  // [nq][total]
  float* rope = scratch.data() + size_t(nq) * total;
  const int64_t ld = int64_t(total);
  k.dot_rows(qabs, ld_abs, nq, R, rows.data(), 0, int64_t(common), score, ld);
  k.dot_rows(qrope, ld_rope, nq, P, rows.data(), R, int64_t(common), rope, ld);
  for (int i = 1; i < nq; ++i) {
    const int64_t extra = int64_t(counts[i] - common);
    k.dot_rows(qabs + i * ld_abs, ld_abs, 1, R, rows.data() + common, 0, extra, score + i * ld + common, ld);
    k.dot_rows(qrope + i * ld_rope, ld_rope, 1, P, rows.data() + common, R, extra, rope + i * ld + common, ld);
  }
  for (int i = 0; i < nq; ++i) {
    float* probs = score + i * ld;
    const float* r = rope + i * ld;
    const size_t count = counts[i];
    float mx = -INFINITY;
    for (size_t s = 0; s < count; ++s) {
      probs[s] = (probs[s] + r[s]) * scale;
      mx = std::max(mx, probs[s]);
    }
    float sum = 0.f;
    for (size_t s = 0; s < count; ++s) {
      probs[s] = std::exp(probs[s] - mx);
      sum += probs[s];
    }
    float* o = olat + size_t(i) * R;
    std::fill(o, o + R, 0.f);
    for (size_t s = 0; s < count; ++s) k.axpy(probs[s] / sum, rows[s], R, o);
  }
}

// One query over the first `count` rows.
template <class RowAt>
void latent_attention(const float* qabs, const float* qrope, int R, int P, float scale, size_t count, RowAt row_at,
                      std::vector<float>& scratch, float* olat) {
  latent_attention(qabs, R, qrope, P, 1, R, P, scale, &count, row_at, scratch, olat);
}

}  // namespace deltafin
