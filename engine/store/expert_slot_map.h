#pragma once
// Which (layer, expert) each of a fixed number of slots holds, and which slot a miss takes: the
// replacement policy of a tier whose slots are filled by the caller (the VRAM tier), kept apart
// from any device so that it is tested on its own.
//
// Every use adds one to a slot's count, and every `half_life` requests (a request is one layer of
// one pass) all counts halve. A miss takes an empty slot, else the slot with the lowest count not
// used by the current request, the most recently used among equals. A newcomer starts at 1, so it is
// the next to go unless it is used again, while experts used every token keep their slots and cold
// ones fade below 1 and give theirs up. Plain LRU, or least recently used among equals, has none of
// this: when a pass cycles through more experts than there are slots (every expert of every layer,
// once per token), each miss evicts the expert needed soonest and nothing is ever hit.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace deltafin {

class ExpertSlotMap {
 public:
  static constexpr int kDefaultHalfLife = 4096;  // requests: about 44 tokens of K3's 92 MoE layers

  explicit ExpertSlotMap(int slot_count, int half_life = kDefaultHalfLife);

  int slot_count() const { return static_cast<int>(key_.size()); }
  // Starts a request: the slots it uses are not taken by its own misses.
  void begin_request();
  // The slot holding (layer, expert), counted as a use; -1 when none does.
  int use(int layer, int expert);
  // The slot a miss of (layer, expert) goes to, counted as its first use; `evicted` says whether
  // another expert left it. -1 when every slot is already used by this request.
  int claim(int layer, int expert, bool* evicted = nullptr);
  // A slot for (layer, expert) fetched ahead of the request that will use it (a prediction): never
  // one used at or after request `keep_from`, and not counted as a use, so a wrong guess is the
  // first to go. -1 when no slot qualifies.
  int claim_ahead(int layer, int expert, uint64_t keep_from);
  uint64_t request() const { return request_; }
  // Empties one slot (a failed fill) or all of them.
  void forget(int slot);
  void clear();

  bool holds(int slot) const { return key_[size_t(slot)] >= 0; }
  int layer_of(int slot) const { return static_cast<int>(key_[size_t(slot)] >> 32); }
  int expert_of(int slot) const { return static_cast<int>(key_[size_t(slot)] & 0xffffffff); }
  int find(int layer, int expert) const;  // no use counted

 private:
  static int64_t key(int layer, int expert) { return (int64_t(layer) << 32) | uint32_t(expert); }
  // The slot a claim takes: empty first, else the lowest count among slots last used before
  // request keep_from, the most recently used among equals; -1 when none.
  int pick(uint64_t keep_from, bool* evicted) const;
  void take(int slot, int layer, int expert, double count);
  int half_life_;
  uint64_t request_ = 0;
  std::vector<int64_t> key_;    // -1 = empty
  std::vector<uint64_t> used_;  // request of the last use
  std::vector<double> count_;   // uses, halved every half_life_ requests
  std::unordered_map<int64_t, int> where_;
};

}  // namespace deltafin
