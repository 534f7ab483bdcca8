#pragma once
#include <cstdint>
#include <span>

namespace deltafin {

// How the target picks its token. temperature 0 = greedy (argmax, lowest id on ties).
struct SamplingParams {
  float temperature = 0.f;
  float top_p = 1.f;
  int top_k = 0;  // 0 = no limit
  uint64_t seed = 0;
  bool greedy() const { return temperature <= 0.f; }
};

// A uniform in [0, 1) that depends only on (seed, position): the token drawn at
// a position never depends on how many tokens were computed in the same pass,
// so drafting cannot change a seeded sample.
double position_uniform(uint64_t seed, int64_t position);

// Picks the token for `position` from one row of logits.
int32_t sample_token(std::span<const float> logits, const SamplingParams& p, int64_t position);

}  // namespace deltafin
