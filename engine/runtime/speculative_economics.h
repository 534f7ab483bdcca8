#pragma once
#include <vector>

namespace deltafin {

// Live economics of drafting: from measured pass costs and acceptance, how many
// guesses a verify pass should carry, or whether to decode plainly. Decisions
// only change speed: the verifier keeps the output identical either way.
class DraftEconomics {
 public:
  explicit DraftEconomics(int max_k);

  void record_plain(double seconds);  // one T = 1 target pass
  // A verify pass of T rows carrying `offered` guesses of which the first `accepted` matched;
  // `draft_seconds` is what the proposer took to make them.
  void record_verify(int T, double seconds, int offered, int accepted, double draft_seconds);

  // Guesses to ask for now (<= max_k); 0 = decode this step plainly.
  int choose_k();

  double pass_cost(int T) const;        // measured (or estimated) seconds of a T-row pass
  double expected_tokens(int k) const;  // tokens one pass with k guesses yields
  double acceptance(int i) const;       // P(guess i accepted | guesses before it accepted), 1-based
  bool measured(int T) const { return T < int(cost_.size()) && n_[T] > 0; }

 private:
  int max_k_;
  std::vector<double> cost_;          // [T] smoothed seconds
  std::vector<int> n_;                // [T] samples
  std::vector<long> reached_, hits_;  // [i] per guess position, 1-based
  double draft_cost_ = 0;
  int draft_n_ = 0;
  int plain_left_ = 0;  // plain steps before the next probe
  int probe_gap_ = 8;
};

}  // namespace deltafin
