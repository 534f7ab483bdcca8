#pragma once
// Test-only proposers: an oracle that knows the target's own continuation, a
// corrupted oracle (right for a while, then wrong), uniform random guesses, and
// one that throws. None of them may change the output ids.
#include <random>
#include <stdexcept>

#include "runtime/draft_proposer.h"

namespace deltafin::test {

class OracleProposer : public DraftProposer {
 public:
  // `prompt_len` tokens precede `future`, the target's plain continuation.
  OracleProposer(size_t prompt_len, std::vector<int32_t> future, int wrong_every = 0, uint64_t seed = 1)
      : prompt_len_(prompt_len), future_(std::move(future)), wrong_every_(wrong_every), rng_(seed) {}
  std::string name() const override { return wrong_every_ ? "oracle-corrupted" : "oracle"; }
  void propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) override {
    out.clear();
    // pending is future[g - 1] where g tokens have been generated so far.
    const size_t g = history.size() - prompt_len_ + 1;
    for (size_t i = g; i < future_.size() && static_cast<int>(out.size()) < max_k; ++i) out.push_back(future_[i]);
    if (wrong_every_ > 0 && !out.empty() && rng_() % wrong_every_ == 0) {
      const size_t at = rng_() % out.size();
      out[at] = (out[at] + 1 + static_cast<int32_t>(rng_() % 7)) % vocab_guess_;
    }
  }
  int preferred_k() const override { return 5; }

 private:
  size_t prompt_len_;
  std::vector<int32_t> future_;
  int wrong_every_;
  std::mt19937_64 rng_;
  int32_t vocab_guess_ = 512;
};

class RandomProposer : public DraftProposer {
 public:
  RandomProposer(int32_t vocab, uint64_t seed) : vocab_(vocab), rng_(seed) {}
  std::string name() const override { return "random"; }
  void propose(std::span<const int32_t>, int32_t, int max_k, std::vector<int32_t>& out) override {
    out.clear();
    const int n = static_cast<int>(rng_() % (max_k + 1));
    for (int i = 0; i < n; ++i) out.push_back(static_cast<int32_t>(rng_() % vocab_));
  }
  int preferred_k() const override { return 4; }

 private:
  int32_t vocab_;
  std::mt19937_64 rng_;
};

class ThrowingProposer : public DraftProposer {
 public:
  explicit ThrowingProposer(int after) : left_(after) {}
  std::string name() const override { return "throwing"; }
  void propose(std::span<const int32_t>, int32_t pending, int max_k, std::vector<int32_t>& out) override {
    if (left_-- <= 0) throw std::runtime_error("deliberate drafter failure");
    out.assign(max_k, pending);
  }

 private:
  int left_;
};

}  // namespace deltafin::test
