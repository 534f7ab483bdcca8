#pragma once
#include <functional>
#include <span>

#include "runtime/generate.h"

namespace deltafin {

// generate() with a drafter: the exact verifier. Each step feeds [pending, g1..gk]
// as one pass, accepts the longest prefix of guesses equal to the target's own
// choice at each position (greedy or the (seed, position)-keyed sample), commits
// exactly the rows plain decoding would have fed, and continues from the target's
// next token. Any drafter failure turns drafting off for the rest of the call.
GenerateResult generate_speculative(DecodeSession& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                                    const std::function<bool(int32_t)>& on_token);

}  // namespace deltafin
