#include "runtime/speculative_economics.h"

#include <algorithm>
#include <cstdlib>

namespace deltafin {

namespace {
// Weight of the newest sample in the smoothed costs: recent enough to follow
// cache warm-up, smooth enough to ignore one slow pass.
constexpr double kNewWeight = 0.25;
// Longest stretch of plain decoding between probes of a drafter that did not pay.
constexpr int kMaxProbeGap = 512;
}  // namespace

DraftEconomics::DraftEconomics(int max_k)
    : max_k_(std::max(1, max_k)),
      cost_(max_k_ + 2, 0.0),
      n_(max_k_ + 2, 0),
      reached_(max_k_ + 1, 0),
      hits_(max_k_ + 1, 0) {}

void DraftEconomics::record_plain(double seconds) { record_verify(1, seconds, 0, 0, 0.0); }

void DraftEconomics::record_verify(int T, double seconds, int offered, int accepted, double draft_seconds) {
  if (T < 1 || T >= int(cost_.size())) return;
  cost_[T] = n_[T] == 0 ? seconds : (1 - kNewWeight) * cost_[T] + kNewWeight * seconds;
  ++n_[T];
  if (offered > 0) {
    draft_cost_ = draft_n_ == 0 ? draft_seconds : (1 - kNewWeight) * draft_cost_ + kNewWeight * draft_seconds;
    ++draft_n_;
    for (int i = 1; i <= std::min(offered, max_k_); ++i) {
      if (i > accepted + 1) break;  // guess i was only judged if every guess before it matched
      ++reached_[i];
      if (i <= accepted) ++hits_[i];
    }
  }
}

double DraftEconomics::acceptance(int i) const {
  // Laplace-smoothed: an untried position counts as a coin flip until measured.
  return (double(hits_[i]) + 1.0) / (double(reached_[i]) + 2.0);
}

double DraftEconomics::expected_tokens(int k) const {
  double e = 1, run = 1;
  for (int i = 1; i <= k; ++i) {
    run *= acceptance(i);
    e += run;
  }
  return e;
}

double DraftEconomics::pass_cost(int T) const {
  if (measured(T)) return cost_[T];
  // Unmeasured: scale the nearest measured pass linearly in rows (pessimistic for
  // resident weights, about right when every row brings new streamed experts).
  int best = 0;
  for (int t = 1; t < int(cost_.size()); ++t)
    if (n_[t] > 0 && (best == 0 || std::abs(t - T) < std::abs(best - T))) best = t;
  if (best == 0) return 0;
  return best == 1 ? cost_[1] : cost_[best] * double(T) / double(best);
}

int DraftEconomics::choose_k() {
  if (!measured(1)) return 0;  // measure the plain cost first
  // Try every length until each has a measurement: exploration is cheap and bounded.
  for (int k = 1; k <= max_k_; ++k)
    if (!measured(k + 1) && draft_n_ < 2 * max_k_) return k;
  const double plain_rate = 1.0 / cost_[1];
  int best_k = 0;
  double best_rate = plain_rate;
  for (int k = 1; k <= max_k_; ++k) {
    const double rate = expected_tokens(k) / (pass_cost(k + 1) + draft_cost_);
    if (rate > best_rate) {
      best_rate = rate;
      best_k = k;
    }
  }
  if (best_k > 0) {
    probe_gap_ = 8;
    return best_k;
  }
  // Not paying now: decode plainly, and probe again after a growing gap in case
  // the text became predictable.
  if (plain_left_ > 0) {
    --plain_left_;
    return 0;
  }
  plain_left_ = probe_gap_;
  probe_gap_ = std::min(kMaxProbeGap, probe_gap_ * 2);
  return max_k_;
}

}  // namespace deltafin
