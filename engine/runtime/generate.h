#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/k3_model.h"
#include "runtime/sampler.h"

namespace deltafin {

struct GenerateOptions {
  int max_new = 128;
  SamplingParams sampling;            // default greedy
  std::vector<int32_t> stop_ids;      // generation ends after emitting one of these
  int prefill_chunk = 64;
};

struct GenerateStats {
  int prompt_tokens = 0, new_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0, first_token_seconds = 0;
  uint64_t expert_bytes = 0;          // routed-expert bytes requested from the expert source
  double decode_tokens_per_second() const { return decode_seconds > 0 && new_tokens > 1 ? (new_tokens - 1) / decode_seconds : 0; }
};

struct GenerateResult {
  std::vector<int32_t> ids;
  GenerateStats stats;
  bool stopped_by_callback = false;
};

// Prefill `prompt` into the session (which may already hold a prefix) and
// decode up to max_new tokens. on_token(id) returning false stops generation.
// Every token is the target's own choice: the session ends committed.
GenerateResult generate(K3Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const std::function<bool(int32_t)>& on_token = {});

}  // namespace deltafin
