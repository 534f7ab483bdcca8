#include "runtime/moe_router.h"

#include <algorithm>

#include "runtime/ops.h"

namespace deltafin {

namespace {

template <class L>
void route(const L* logits, const float* bias, int n, int k, bool renormalize, float scaling, RouterChoice& out) {
  std::vector<double> s(static_cast<size_t>(n)), key(static_cast<size_t>(n));
  for (int e = 0; e < n; ++e) {
    s[e] = sigmoid64(logits[e]);
    key[e] = s[e] + double(bias[e]);
  }
  std::vector<int> order;
  top_k_by_key(key.data(), n, k, order);
  std::sort(order.begin(), order.end());  // a fixed summation order: ascending expert id
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += s[order[i]];
  out.ids.assign(order.begin(), order.end());
  out.weights.resize(size_t(k));
  out.weights64.resize(size_t(k));
  for (int i = 0; i < k; ++i) {
    const double sc = s[order[i]];
    out.weights64[i] = (renormalize ? sc / (sum + 1e-20) : sc) * double(scaling);
    out.weights[i] = float(out.weights64[i]);
  }
}

}  // namespace

void route_token(const float* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out) {
  route(logits, bias, n, k, renormalize, scaling, out);
}

void route_token(const double* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out) {
  route(logits, bias, n, k, renormalize, scaling, out);
}

}  // namespace deltafin
