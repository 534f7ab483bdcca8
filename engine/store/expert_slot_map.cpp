#include "store/expert_slot_map.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace deltafin {

ExpertSlotMap::ExpertSlotMap(int slot_count, int half_life)
    : half_life_(half_life > 0 ? half_life : kDefaultHalfLife),
      key_(size_t(std::max(0, slot_count)), -1),
      used_(key_.size(), 0),
      unused_guess_(key_.size(), false),
      uses_(key_.size(), 0.0) {}

double& ExpertSlotMap::layer_requests(int layer) {
  const size_t l = size_t(std::max(0, layer));
  if (l >= layer_requests_.size()) {
    layer_requests_.resize(l + 1, 0.0);
    layer_last_.resize(l + 1, 0);
    layer_slots_.resize(l + 1, 0);
  }
  return layer_requests_[l];
}

void ExpertSlotMap::begin_request(int layer) {
  if (++request_ % uint64_t(half_life_) == 0) {
    for (double& u : uses_) u *= 0.5;
    for (double& r : layer_requests_) r *= 0.5;
    for (auto it = away_uses_.begin(); it != away_uses_.end();) {
      it->second *= 0.5;
      it = it->second < 1e-3 ? away_uses_.erase(it) : std::next(it);  // long forgotten
    }
  }
  layer_ = std::max(0, layer);
  layer_requests(layer_) += 1.0;
  layer_last_[size_t(layer_)] = request_;
}

int ExpertSlotMap::find(int layer, int expert) const {
  auto it = where_.find(key(layer, expert));
  return it == where_.end() ? -1 : it->second;
}

int ExpertSlotMap::use(int layer, int expert) {
  const int s = find(layer, expert);
  if (s >= 0) {
    uses_[size_t(s)] += 1.0;
    used_[size_t(s)] = request_;
    unused_guess_[size_t(s)] = false;
  } else {
    away_uses_[key(layer, expert)] += 1.0;
  }
  return s;
}

int ExpertSlotMap::claim(int layer, int expert, bool* evicted) {
  const int s = pick(request_, evicted);
  if (s >= 0) take(s, layer, expert, false);
  return s;
}

int ExpertSlotMap::claim_ahead(int layer, int expert, uint64_t keep_from) {
  if (find(layer, expert) >= 0) return -1;
  const int s = pick(keep_from, nullptr);
  if (s >= 0) take(s, layer, expert, true);
  return s;
}

double ExpertSlotMap::next_use(size_t slot) const {
  constexpr double kNever = std::numeric_limits<double>::max();
  const int l = layer_of(int(slot));
  const double M = double(layer_requests_.size());  // requests per round: the layers in order
  if (size_t(l) >= layer_requests_.size() || double(request_ - layer_last_[size_t(l)]) > 2 * M) return kNever;
  const double asked = layer_requests_[size_t(l)];
  const double p = asked > 0 ? std::min(1.0, uses_[slot] / asked) : 0.0;
  if (!(p > 0)) return kNever;
  // The requests until layer l comes round (a layer of the current request: a whole round).
  const double d = l > layer_ ? double(l - layer_) : M - double(layer_ - l);
  return d + M * (1.0 - p) / p;
}

int ExpertSlotMap::pick(uint64_t keep_from, bool* evicted) const {
  const double M = std::max<double>(1, double(layer_requests_.size()));
  int best = -1;
  bool best_guess = false;
  double best_next = 0, best_round = 0;
  int best_held = 0;
  for (int s = 0; s < slot_count(); ++s) {
    const size_t i = size_t(s);
    if (key_[i] < 0) {
      best = s;
      break;
    }
    if (used_[i] >= keep_from) continue;
    const bool guess = unused_guess_[i];
    const double next = guess ? 0.0 : next_use(i);
    const double round = std::floor((next - 1) / M);  // 0: needed within this round of the layers
    const int held = layer_slots_[size_t(layer_of(s))];
    bool better = best < 0;
    if (!better) {
      if (guess != best_guess) better = guess;
      else if (round != best_round) better = round > best_round;
      else if (held != best_held) better = held > best_held;
      else if (next != best_next) better = next > best_next;
      else better = used_[i] > used_[size_t(best)];
    }
    if (better) {
      best = s;
      best_guess = guess;
      best_next = next;
      best_round = round;
      best_held = held;
    }
  }
  if (evicted) *evicted = best >= 0 && key_[size_t(best)] >= 0;
  return best;
}

void ExpertSlotMap::take(int slot, int layer, int expert, bool guess) {
  const size_t i = size_t(slot);
  if (key_[i] >= 0) {
    where_.erase(key_[i]);
    if (uses_[i] > 0) away_uses_[key_[i]] = uses_[i];
    --layer_slots_[size_t(layer_of(slot))];
  }
  layer_requests(layer);  // sizes the per-layer tables
  ++layer_slots_[size_t(std::max(0, layer))];
  key_[i] = key(layer, expert);
  where_[key_[i]] = slot;
  auto it = away_uses_.find(key_[i]);
  uses_[i] = it == away_uses_.end() ? 0.0 : it->second;
  if (it != away_uses_.end()) away_uses_.erase(it);
  used_[i] = request_;
  unused_guess_[i] = guess;
}

void ExpertSlotMap::forget(int slot) {
  const size_t i = size_t(slot);
  if (key_[i] >= 0) {
    where_.erase(key_[i]);
    if (uses_[i] > 0) away_uses_[key_[i]] = uses_[i];
    --layer_slots_[size_t(layer_of(slot))];
  }
  key_[i] = -1;
  used_[i] = 0;
  uses_[i] = 0.0;
  unused_guess_[i] = false;
}

void ExpertSlotMap::clear() {
  for (int s = 0; s < slot_count(); ++s) forget(s);
}

}  // namespace deltafin
