#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "cpu/gemm.h"

namespace deltafin {

// One query head over absorbed MLA rows [R latent | P shared key part]:
// scores (q_abs . latent + q_rope . rope) * scale, softmax in row order, then
// the probability-weighted sum of the latents into olat[R]. row_at(s) gives row s.
// Shared by the K3 target and DSpark so both reduce in exactly this order.
// Every sum is a plain loop in index order with each product rounded before it is added; the
// kernels (kernels/cpu: dot_rows, axpy) keep exactly that while running many positions at once.
template <class RowAt>
void latent_attention(const float* qabs, const float* qrope, int R, int P, float scale, size_t count, RowAt row_at,
                      std::vector<float>& probs, float* olat) {
  const kernels::KernelTable& k = kernels::active();
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> rope;
  rows.resize(count);
  for (size_t s = 0; s < count; ++s) rows[s] = row_at(s);
  probs.resize(count);
  rope.resize(count);
  k.dot_rows(qabs, R, rows.data(), 0, int64_t(count), probs.data());
  k.dot_rows(qrope, P, rows.data(), R, int64_t(count), rope.data());
  float mx = -INFINITY;
  for (size_t s = 0; s < count; ++s) {
    probs[s] = (probs[s] + rope[s]) * scale;
    mx = std::max(mx, probs[s]);
  }
  float sum = 0.f;
  for (size_t s = 0; s < count; ++s) {
    probs[s] = std::exp(probs[s] - mx);
    sum += probs[s];
  }
  std::fill(olat, olat + R, 0.f);
  for (size_t s = 0; s < count; ++s) k.axpy(probs[s] / sum, rows[s], R, olat);
}

}  // namespace deltafin
