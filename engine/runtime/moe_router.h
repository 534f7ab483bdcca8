#pragma once
// The K3 MoE router for one token (K3-SPEC.md section 3, "MoE"): choose the top-k experts by
// sigmoid score plus correction bias, weight each chosen expert by its plain score.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace deltafin {

struct RouterChoice {
  std::vector<int32_t> ids;       // top_k expert ids, ascending (the fixed order their outputs are summed in)
  std::vector<float> weights;     // per id: score / (sum of chosen scores + 1e-20) if renormalize, times scaling
  std::vector<double> weights64;  // the same in fp64, not rounded (what the K3 forward weighs by)
};

// The k largest keys' indices; equal keys go to the lower index, so the choice never depends on
// the order a sort happens to visit them in. Unordered: callers sort what they need.
template <class Key>
void top_k_by_key(const Key* key, int n, int k, std::vector<int>& order) {
  order.resize(size_t(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
  order.resize(size_t(k));
}

// `logits`: the router matmul's output for one token (n experts); `bias`: the correction bias.
// Scores, keys and the renormalising sum are fp64 (a choice between near-tied experts is decided on
// the fp64 keys); each weight is rounded to fp32 once.
void route_token(const float* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out);
// The same from fp64 logits.
void route_token(const double* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out);

}  // namespace deltafin
