#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/draft_proposer.h"
#include "runtime/k3_model.h"
#include "runtime/sampler.h"

namespace deltafin {

struct GenerateOptions {
  int max_new = 128;
  SamplingParams sampling;        // default greedy
  std::vector<int32_t> stop_ids;  // generation ends after emitting one of these
  int prefill_chunk = 64;
  // Speculative decoding: guesses from `drafter` are verified by the target in one
  // pass; the ids are identical to plain decoding. Null = plain decoding.
  DraftProposer* drafter = nullptr;
  int draft_max = 0;          // most guesses per verify pass (0 = the drafter's preferred length)
  bool draft_always = false;  // verify every step even when drafting does not pay (tests, benchmarks)
  // Ids the session committed before `prompt` (or a suffix of them), for drafters that read the
  // history (Qwen, n-gram) when a caller prefilled the session itself. Must outlive the call.
  std::span<const int32_t> draft_context;
  // Called with the fp32 logits each new token is sampled from, before on_token (log
  // probabilities). Plain decoding only: `drafter` is not used while this is set.
  std::function<void(std::span<const float>)> on_logits;
};

struct GenerateStats {
  int prompt_tokens = 0, new_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0, first_token_seconds = 0;
  uint64_t expert_bytes = 0;  // routed-expert bytes requested from the expert source
  // Speculative decoding (all zero without a drafter).
  std::string drafter;             // the drafter's name ("" = none)
  int proposed = 0, accepted = 0;  // guesses offered to / accepted by the target
  int verify_passes = 0, plain_passes = 0;
  std::vector<double> pass_seconds;  // [T] total seconds of decode passes of T rows (index 0 unused)
  std::vector<int> pass_count;       // [T] number of such passes
  double draft_seconds = 0;          // time spent by the drafter
  std::string draft_fallback;        // why drafting stopped ("" = it did not)
  double acceptance_rate() const { return proposed > 0 ? double(accepted) / proposed : 0; }
  double decode_tokens_per_second() const {
    return decode_seconds > 0 && new_tokens > 1 ? (new_tokens - 1) / decode_seconds : 0;
  }
};

struct GenerateResult {
  std::vector<int32_t> ids;
  GenerateStats stats;
  bool stopped_by_callback = false;
};

// Prefill `prompt` into the session (which may already hold a prefix) and
// decode up to max_new tokens. on_token(id) returning false stops generation.
// Every token is the target's own choice: the session ends committed.
GenerateResult generate(DecodeSession& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const std::function<bool(int32_t)>& on_token = {});

}  // namespace deltafin
