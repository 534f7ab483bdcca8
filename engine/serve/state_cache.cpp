#include "serve/state_cache.h"

#include <algorithm>

namespace deltafin::serve {

uint64_t StateCache::size_of(const K3State& s) {
  uint64_t n = 0;
  for (const auto& k : s.kda) n += (k.S.size() + k.conv.size()) * sizeof(double);
  for (const auto& m : s.mla) n += m.cache.size() * sizeof(double);
  return n;
}

static bool is_prefix(const std::vector<int32_t>& p, std::span<const int32_t> ids, size_t max_len) {
  return p.size() <= max_len && p.size() <= ids.size() && std::equal(p.begin(), p.end(), ids.begin());
}

size_t StateCache::best_prefix(std::span<const int32_t> ids, size_t max_len) const {
  size_t best = 0;
  for (const Entry& e : entries_)
    if (e.ids.size() > best && is_prefix(e.ids, ids, max_len)) best = e.ids.size();
  return best;
}

std::optional<K3State> StateCache::get(std::span<const int32_t> ids, size_t len) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->ids.size() == len && is_prefix(it->ids, ids, len)) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front().state;
    }
  return std::nullopt;
}

void StateCache::put(std::span<const int32_t> ids, const K3State& state) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->ids.size() == ids.size() && std::equal(ids.begin(), ids.end(), it->ids.begin())) {
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
  const uint64_t b = size_of(state);
  if (b > max_bytes_) return;
  entries_.push_front(Entry{std::vector<int32_t>(ids.begin(), ids.end()), state, b});
  bytes_ += b;
  while (bytes_ > max_bytes_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

}  // namespace deltafin::serve
