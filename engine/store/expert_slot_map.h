#pragma once
// Which (layer, expert) each of a fixed number of slots holds, and which slot a miss takes: the
// replacement policy of a tier whose slots are filled by the caller (the VRAM tier), kept apart
// from any device so that it is tested on its own.
//
// A miss takes an empty slot, else, among slots the current request does not use, the one whose
// expert is expected to be needed last (Belady's rule with estimated odds), counted in whole rounds
// of the layers; within a round, one of the layer that holds the most slots (never the claiming
// layer's own on that account: a copy ahead for the next layer would then evict that layer's
// resident experts, only for its request to copy them back). Each layer comes round every M
// requests, its period (the gap between its last two requests, or, when its last four gaps
// alternate, as verify passes over every layer between decode steps over a few make them, the one
// before), so an expert of layer l, used in a fraction p of its layer's requests, is expected next
// when l comes round again (d requests: its period less the requests since it was asked) plus,
// should it miss that time, (1 - p) / p further periods: d + M (1 - p) / p. p counts every use of
// the expert, resident or not (uses and the layer's requests halve every `half_life` requests), so
// an expert that turns hot takes a slot from one that was hot only when the slots were filled; a
// layer not requested for two periods is no longer passed through, and its experts go first. The
// round is the current layer's period: decode over the GPU's own layers after a prompt pass over
// all of them goes round those alone, and the prompt's other layers (asked for once, so taking the
// round as their period) leave within two rounds.
// - Every expert of every layer, once per token (the placement slice): p = 1 for all, every
//   expert is needed within the round, and a miss takes a slot of the layer holding the most, so
//   the resident share spreads evenly over the layers and hits (S - d) / (N - d) of N experts with
//   S slots and d per layer, the planner's figure (a fixed set would hit (S - d) / N; plain LRU,
//   which evicts the expert needed soonest, nothing). Evicting by next use alone hits as often but
//   keeps whole layers resident and others not at all, and a GPU's copies of a layer's misses then
//   find no resident layer's compute to overlap (copies ahead go one layer ahead).
// - Skewed routing: the most used experts win the slots (as with LFU over all uses; counting only
//   uses while resident, a newcomer never outscores those that came first).
// - Guesses fetched ahead and not yet used go before anything else, so a wrong guess costs one slot
//   for one layer.
#include <array>
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
  // Starts a request for one layer: the slots it uses are not taken by its own misses.
  void begin_request(int layer);
  // The slot holding (layer, expert), counted as a use; -1 when none does (the use still counts
  // towards the expert's odds, for when it is claimed).
  int use(int layer, int expert);
  // The slot a miss of (layer, expert) goes to; `evicted` says whether another expert left it.
  // -1 when every slot is already used by this request.
  int claim(int layer, int expert, bool* evicted = nullptr);
  // A slot for (layer, expert) fetched ahead of the request that will use it (a prediction): never
  // one used at or after request `keep_from`, and the first to go until it is used. -1 when no slot
  // qualifies.
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
  // The slot a claim for `for_layer` takes: empty first, else among slots last used before request
  // keep_from an unused guess, else the one needed last in whole rounds, then one of the layer
  // other than for_layer that holds the most, then the one needed last, the most recently used
  // among equals; -1 when none.
  int pick(uint64_t keep_from, int for_layer, bool* evicted) const;
  void take(int slot, int layer, int expert, bool guess);
  double& layer_requests(int layer);
  // The layer's period: its last gap, or the one before where its last four alternate; 0 when none.
  uint64_t next_gap(size_t l) const;
  int half_life_;
  uint64_t request_ = 0;
  uint64_t round_ = 0;              // the current layer's period (0: none yet)
  int layer_ = 0;                   // of the current request
  std::vector<int64_t> key_;        // -1 = empty
  std::vector<uint64_t> used_;      // request of the last use
  std::vector<bool> unused_guess_;  // fetched ahead, not used since
  std::vector<double> uses_;        // the resident expert's uses (halved with the rest)
  std::unordered_map<int64_t, int> where_;
  std::unordered_map<int64_t, double> away_uses_;    // the same for experts not resident
  std::vector<double> layer_requests_;               // by layer, halved every half_life_ requests
  std::vector<uint64_t> layer_last_;                 // by layer: its last request
  std::vector<std::array<uint64_t, 4>> layer_gaps_;  // by layer: its last four gaps, last first (0: none)
  std::vector<int> layer_slots_;                     // by layer: the slots holding its experts
  mutable std::vector<double> layer_d_, layer_m_, layer_inv_asked_;  // pick()'s per-layer terms
};

}  // namespace deltafin
