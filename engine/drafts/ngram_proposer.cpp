#include "drafts/ngram_proposer.h"

#include <algorithm>

namespace deltafin {

void NgramProposer::propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) {
  out.clear();
  ctx_.assign(history.begin(), history.end());
  ctx_.push_back(pending);
  const int64_t N = static_cast<int64_t>(ctx_.size());
  for (int n = std::min<int64_t>(max_n_, N - 1); n >= min_n_; --n) {
    const int32_t* suffix = ctx_.data() + N - n;
    // Most recent earlier match ending at j (j < N - 1, so it has a continuation).
    for (int64_t j = N - 2; j >= n - 1; --j) {
      if (!std::equal(suffix, suffix + n, ctx_.data() + j - n + 1)) continue;
      for (int64_t c = j + 1; c < N && static_cast<int>(out.size()) < max_k; ++c) out.push_back(ctx_[c]);
      return;
    }
  }
}

}  // namespace deltafin
