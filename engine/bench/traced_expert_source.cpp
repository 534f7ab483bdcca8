#include "bench/traced_expert_source.h"

namespace deltafin {

std::unique_ptr<ExpertBatch> TracedExpertSource::request(int layer, std::span<const int> experts) {
  passes_.back().emplace_back(layer, std::vector<int>(experts.begin(), experts.end()));
  return inner_->request(layer, experts);
}

void TracedExpertSource::preload(const PassRequests& pass) {
  for (const auto& [layer, experts] : pass) {
    auto batch = inner_->request(layer, experts);
    for (size_t i = 0; i < experts.size(); ++i) batch->next();
  }
}

}  // namespace deltafin
