#pragma once
#include "runtime/draft_proposer.h"

namespace deltafin {

// Prompt-lookup drafting: find the most recent earlier occurrence of the longest
// suffix n-gram of the context (n from max_n down to min_n) and propose the
// tokens that followed it. Costs no model weights; pays on code, quotes and repetition.
class NgramProposer : public DraftProposer {
 public:
  explicit NgramProposer(int min_n = 1, int max_n = 4, int k = 6) : min_n_(min_n), max_n_(max_n), k_(k) {}
  std::string name() const override { return "ngram"; }
  void propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) override;
  int preferred_k() const override { return k_; }

 private:
  int min_n_, max_n_, k_;
  std::vector<int32_t> ctx_;
};

}  // namespace deltafin
