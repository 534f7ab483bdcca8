#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace deltafin {

// One query head over absorbed MLA rows [R latent | P shared key part]:
// scores (q_abs . latent + q_rope . rope) * scale, softmax in row order, then
// the probability-weighted sum of the latents into olat[R]. row_at(s) gives row s.
// Shared by the K3 target and DSpark so both reduce in exactly this order.
template <class RowAt>
void latent_attention(const float* qabs, const float* qrope, int R, int P, float scale, size_t count, RowAt row_at,
                      std::vector<float>& probs, float* olat) {
  probs.resize(count);
  float mx = -INFINITY;
  for (size_t s = 0; s < count; ++s) {
    const float* row = row_at(s);
    float a = 0.f;
    for (int j = 0; j < R; ++j) a += qabs[j] * row[j];
    float r = 0.f;
    for (int j = 0; j < P; ++j) r += qrope[j] * row[R + j];
    probs[s] = (a + r) * scale;
    mx = std::max(mx, probs[s]);
  }
  float sum = 0.f;
  for (size_t s = 0; s < count; ++s) {
    probs[s] = std::exp(probs[s] - mx);
    sum += probs[s];
  }
  std::fill(olat, olat + R, 0.f);
  for (size_t s = 0; s < count; ++s) {
    const float p = probs[s] / sum;
    const float* row = row_at(s);
    for (int j = 0; j < R; ++j) olat[j] += p * row[j];
  }
}

}  // namespace deltafin
