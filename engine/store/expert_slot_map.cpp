#include "store/expert_slot_map.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"

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
    layer_gaps_.resize(l + 1, {0, 0, 0, 0});
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
  // Each layer's period is the gap to its last request (decode after a prompt pass goes round the
  // GPU's own layers only, not every layer the prompt pass asked for); the current layer's is the
  // round (a layer asked for the first time leaves the round of the layer before).
  const size_t c = size_t(layer_);
  if (layer_last_[c] > 0) {
    auto& g = layer_gaps_[c];
    g = {request_ - layer_last_[c], g[0], g[1], g[2]};
  }
  layer_last_[c] = request_;
  if (const uint64_t g = next_gap(c); g > 0) round_ = g;
}

uint64_t ExpertSlotMap::next_gap(size_t l) const {
  // The last gap again, unless the last four alternate (verify passes over every layer between
  // decode steps over a few): then the one before it.
  const auto& g = layer_gaps_[l];
  return g[3] > 0 && g[2] == g[0] && g[3] == g[1] && g[1] != g[0] ? g[1] : g[0];
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
  const int s = pick(request_, layer, evicted);
  if (s >= 0) take(s, layer, expert, false);
  return s;
}

int ExpertSlotMap::claim_ahead(int layer, int expert, uint64_t keep_from) {
  if (find(layer, expert) >= 0) return -1;
  const int s = pick(keep_from, layer, nullptr);
  if (s >= 0) take(s, layer, expert, true);
  return s;
}

int ExpertSlotMap::pick(uint64_t keep_from, int for_layer, bool* evicted) const {
  constexpr double kNever = std::numeric_limits<double>::max();
  const size_t L = layer_requests_.size();
  // Requests per round: the current layer's period, else the layers seen (a first pass goes through them in order).
  const double M = std::max<double>(1, round_ > 0 ? double(round_) : double(L)), inv_M = 1.0 / M;
  // Per layer, once per pick (a pick scans every slot; K3 has thousands): its period, the requests
  // until it comes round (its period less the requests since it was asked, at least 1: an overdue
  // layer is due next; a layer asked for once, without a period, where the pass order puts it in
  // the round), and 1 / its requests, or 0 for a layer not requested for two periods (its experts
  // are needed never).
  layer_d_.resize(L);
  layer_inv_asked_.resize(L);
  layer_m_.resize(L);
  for (size_t l = 0; l < L; ++l) {
    const double since = double(request_ - layer_last_[l]);
    const uint64_t g = next_gap(l);
    const double period = g > 0 ? double(g) : M;
    const bool alive = since <= 2 * period && layer_requests_[l] > 0;
    layer_inv_asked_[l] = alive ? 1.0 / layer_requests_[l] : 0.0;
    layer_m_[l] = period;
    layer_d_[l] = g > 0             ? std::max(1.0, period - since)
                  : int(l) > layer_ ? double(int(l) - layer_)
                                    : std::max(1.0, M - double(layer_ - int(l)));
  }
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
    const size_t l = size_t(layer_of(s));
    // The header's d + M (1 - p) / p, p the expert's uses over its layer's requests.
    const double p = std::min(1.0, uses_[i] * layer_inv_asked_[l]);
    const double next = guess ? 0.0 : p > 0 ? layer_d_[l] + layer_m_[l] * (1.0 - p) / p : kNever;
    const double round = std::floor((next - 1) * inv_M);  // 0: needed within this round of the layers
    // The claiming layer's own experts are never the "layer holding the most": copies ahead for the
    // next layer would otherwise, once it held the most, evict its resident experts to make room for
    // its missing ones, and the request then copies those back (a copy for nothing per guess).
    const int held = int(l) == for_layer ? -1 : layer_slots_[l];
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
  if (layer < 0) throw Error("ExpertSlotMap: layer " + std::to_string(layer) + " is not a layer");
  const size_t i = size_t(slot);
  if (key_[i] >= 0) {
    where_.erase(key_[i]);
    if (uses_[i] > 0) away_uses_[key_[i]] = uses_[i];
    --layer_slots_[size_t(layer_of(slot))];
  }
  layer_requests(layer);          // sizes the per-layer tables
  ++layer_slots_[size_t(layer)];  // (a negative layer was refused above)
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
