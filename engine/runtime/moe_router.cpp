#include "runtime/moe_router.h"

#include <algorithm>
#include <numeric>

#include "runtime/ops.h"

namespace deltafin {

void top_k_by_key(const float* key, int n, int k, std::vector<int>& order) {
  order.resize(size_t(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
  order.resize(size_t(k));
}

void route_token(const float* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out) {
  std::vector<float> s(static_cast<size_t>(n)), key(static_cast<size_t>(n));
  for (int e = 0; e < n; ++e) {
    s[e] = sigmoidf(logits[e]);
    key[e] = s[e] + bias[e];
  }
  std::vector<int> order;
  top_k_by_key(key.data(), n, k, order);
  std::sort(order.begin(), order.end());
  float sum = 0.f;
  for (int i = 0; i < k; ++i) sum += s[order[i]];
  out.ids.assign(order.begin(), order.end());
  out.weights.resize(size_t(k));
  for (int i = 0; i < k; ++i) {
    const float sc = s[order[i]];
    out.weights[i] = (renormalize ? sc / (sum + 1e-20f) : sc) * scaling;
  }
}

}  // namespace deltafin
