#include "store/expert_slot_map.h"

#include <algorithm>

namespace deltafin {

ExpertSlotMap::ExpertSlotMap(int slot_count, int half_life)
    : half_life_(half_life > 0 ? half_life : kDefaultHalfLife),
      key_(size_t(std::max(0, slot_count)), -1),
      used_(key_.size(), 0),
      count_(key_.size(), 0.0) {}

void ExpertSlotMap::begin_request() {
  if (++request_ % uint64_t(half_life_) == 0)
    for (double& c : count_) c *= 0.5;
}

int ExpertSlotMap::find(int layer, int expert) const {
  auto it = where_.find(key(layer, expert));
  return it == where_.end() ? -1 : it->second;
}

int ExpertSlotMap::use(int layer, int expert) {
  const int s = find(layer, expert);
  if (s >= 0) {
    count_[size_t(s)] += 1.0;
    used_[size_t(s)] = request_;
  }
  return s;
}

int ExpertSlotMap::claim(int layer, int expert, bool* evicted) {
  const int s = pick(request_, evicted);
  if (s >= 0) take(s, layer, expert, 1.0);
  return s;
}

int ExpertSlotMap::claim_ahead(int layer, int expert, uint64_t keep_from) {
  if (find(layer, expert) >= 0) return -1;
  const int s = pick(keep_from, nullptr);
  if (s >= 0) take(s, layer, expert, 0.0);
  return s;
}

int ExpertSlotMap::pick(uint64_t keep_from, bool* evicted) const {
  int best = -1;
  for (int s = 0; s < slot_count(); ++s) {
    const size_t i = size_t(s);
    if (key_[i] < 0) {
      best = s;
      break;
    }
    if (used_[i] >= keep_from) continue;
    const size_t b = size_t(best);
    if (best < 0 || count_[i] < count_[b] || (count_[i] == count_[b] && used_[i] > used_[b])) best = s;
  }
  if (evicted) *evicted = best >= 0 && key_[size_t(best)] >= 0;
  return best;
}

void ExpertSlotMap::take(int slot, int layer, int expert, double count) {
  const size_t i = size_t(slot);
  if (key_[i] >= 0) where_.erase(key_[i]);
  key_[i] = key(layer, expert);
  where_[key_[i]] = slot;
  count_[i] = count;
  used_[i] = request_;
}

void ExpertSlotMap::forget(int slot) {
  const size_t i = size_t(slot);
  if (key_[i] >= 0) where_.erase(key_[i]);
  key_[i] = -1;
  used_[i] = 0;
  count_[i] = 0.0;
}

void ExpertSlotMap::clear() {
  for (int s = 0; s < slot_count(); ++s) forget(s);
}

}  // namespace deltafin
