#include "store/expert_source.h"

#include "base/error.h"

namespace deltafin {

std::pair<int, ExpertView> ReadyBatch::next() {
  if (next_ >= static_cast<int>(views_.size()))
    throw Error("ExpertBatch::next() called more often than experts requested");
  const int i = next_++;
  return {i, views_[i]};
}

void ReadyBatch::next_ready(std::vector<std::pair<int, ExpertView>>& out, int max) {
  if (max > 0 && next_ >= static_cast<int>(views_.size()))
    throw Error("ExpertBatch::next_ready() called after every expert was handed out");
  for (; max > 0 && next_ < static_cast<int>(views_.size()); --max, ++next_) out.emplace_back(next_, views_[next_]);
}

std::unique_ptr<ExpertBatch> ExpertSource::request(int layer, std::span<const int> experts) {
  std::vector<ExpertView> v;
  acquire(layer, experts, v);
  return std::make_unique<ReadyBatch>(std::move(v));
}

void ExpertSource::acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) {
  out.assign(experts.size(), ExpertView{});
  auto batch = request(layer, experts);
  for (size_t k = 0; k < experts.size(); ++k) {
    auto [i, v] = batch->next();
    out[i] = v;
  }
}

ExpertView view_at(const uint8_t* base, const ExpertLocation& L) {
  ExpertView v;
  v.w1_packed = base + L.part_offset[0];
  v.w1_scale = base + L.part_offset[1];
  v.w2_packed = base + L.part_offset[2];
  v.w2_scale = base + L.part_offset[3];
  v.w3_packed = base + L.part_offset[4];
  v.w3_scale = base + L.part_offset[5];
  return v;
}

}  // namespace deltafin
