#pragma once
// Session states at recent turn boundaries, kept in RAM under a byte budget (least recently used
// out first). KDA states cannot be rewound, so the state at a boundary must be copied before the
// session moves past it if a later request is to resume from there.
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <vector>

#include "runtime/k3_state.h"

namespace deltafin::serve {

class StateCache {
 public:
  explicit StateCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Length of the longest cached prefix of `ids` no longer than `max_len` (0 = none).
  size_t best_prefix(std::span<const int32_t> ids, size_t max_len) const;
  // A copy of the state for ids[0..len), which must be cached.
  std::optional<K3State> get(std::span<const int32_t> ids, size_t len);
  void put(std::span<const int32_t> ids, const K3State& state);

  uint64_t bytes() const { return bytes_; }
  size_t count() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<int32_t> ids;
    K3State state;
    uint64_t bytes = 0;
  };
  static uint64_t size_of(const K3State& s);
  std::list<Entry> entries_;  // most recently used first
  uint64_t max_bytes_, bytes_ = 0;
};

}  // namespace deltafin::serve
