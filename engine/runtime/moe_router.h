#pragma once
// The K3 MoE router for one token (K3-SPEC.md section 3, "MoE"): choose the top-k experts by
// sigmoid score plus correction bias, weight each chosen expert by its plain score.
#include <cstdint>
#include <vector>

namespace deltafin {

struct RouterChoice {
  std::vector<int32_t> ids;   // top_k expert ids, ascending (the fixed order their outputs are summed in)
  std::vector<float> weights;  // per id: score / (sum of chosen scores + 1e-20) if renormalize, times scaling
};

// The k largest keys' indices; equal keys go to the lower index, so the choice never depends on
// the order a sort happens to visit them in. Unordered: callers sort what they need.
void top_k_by_key(const float* key, int n, int k, std::vector<int>& order);

// `logits`: the router matmul's output for one token (n experts); `bias`: the correction bias.
void route_token(const float* logits, const float* bias, int n, int k, bool renormalize, float scaling,
                 RouterChoice& out);

}  // namespace deltafin
