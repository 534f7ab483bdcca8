#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "runtime/ops.h"

namespace deltafin {

namespace {
uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
}  // namespace

double position_uniform(uint64_t seed, int64_t position) {
  const uint64_t h =
      mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ static_cast<uint64_t>(position) * 0xd1b54a32d192ed03ull);
  return static_cast<double>(h >> 11) * 0x1p-53;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& p, int64_t position) {
  if (logits.empty()) throw Error("sample_token: empty logits");
  if (p.greedy()) return static_cast<int32_t>(argmax(logits.data(), static_cast<int64_t>(logits.size())));
  if (!(p.top_p > 0.f && p.top_p <= 1.f)) throw Error("top_p must be in (0, 1]");
  const int n = static_cast<int>(logits.size());
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  // Candidates in a canonical order: logit descending, id ascending on ties.
  auto better = [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; };
  int keep = (p.top_k > 0 && p.top_k < n) ? p.top_k : n;
  std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(), better);
  idx.resize(keep);
  std::vector<double> prob(keep);
  const double mx = logits[idx[0]];
  double sum = 0;
  for (int i = 0; i < keep; ++i) {
    prob[i] = std::exp((static_cast<double>(logits[idx[i]]) - mx) / p.temperature);
    sum += prob[i];
  }
  int cut = keep;
  if (p.top_p < 1.f) {
    double cum = 0;
    for (int i = 0; i < keep; ++i) {
      cum += prob[i] / sum;
      if (cum >= p.top_p) {
        cut = i + 1;
        break;
      }
    }
  }
  double mass = 0;
  for (int i = 0; i < cut; ++i) mass += prob[i];
  const double u = position_uniform(p.seed, position) * mass;
  double acc = 0;
  for (int i = 0; i < cut; ++i) {
    acc += prob[i];
    if (u < acc) return idx[i];
  }
  return idx[cut - 1];
}

}  // namespace deltafin
