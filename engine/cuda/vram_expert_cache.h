#pragma once
// The VRAM tier of routed experts: a fixed number of expert slots in device memory over any host
// ExpertSource (the RAM tier, mmap or streamed reads). Misses are copied on a copy stream; the
// compute stream waits on an event, never on the host. Misses go through pinned staging buffers,
// the next expert's host copy overlapping the previous one's DMA; with direct copies on and the
// source's views in its own arena (the RAM tier), the arena is pinned piece by piece as misses
// reach it and experts are copied straight from it instead. The slots keep the checkpoint's row
// layout, which the fp64 expert kernels (k3::routed_experts) read. Which slot a miss takes is
// ExpertSlotMap's policy: the expert expected to be needed last goes (its layer's distance round
// the pass and its odds of being used, counted over all its uses, resident or not), in whole rounds
// of the layers; within a round, one of the layer that holds the most slots.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "store/expert_slot_map.h"
#include "store/expert_source.h"

namespace deltafin {
struct ExpertLocation;
}

namespace deltafin::cuda {

struct VramTierCounters {
  uint64_t requests = 0;  // expert lookups
  uint64_t hits = 0;      // already resident in VRAM
  uint64_t misses = 0;    // copied host -> device
  uint64_t evictions = 0;
  uint64_t bytes_h2d = 0;
  uint64_t direct = 0;      // copies straight from the pinned RAM tier (no staging copy)
  uint64_t ahead = 0;       // experts copied ahead of their request (prefetch), not counted as misses
  uint64_t ahead_used = 0;  // of those, hit by the request they were guessed for
  double fill_seconds = 0;  // host wall time spent supplying misses (host tier + staging + DMA)
};

class VramExpertCache {
 public:
  // slots: experts kept in VRAM (each expert_bytes rounded up per tensor); at least the most
  // distinct experts one layer of one pass can need.
  VramExpertCache(ExpertSource& host, int latent, int inter, int slots, int staging_buffers = 4);
  ~VramExpertCache();
  VramExpertCache(const VramExpertCache&) = delete;
  VramExpertCache& operator=(const VramExpertCache&) = delete;

  // Device pointers of `experts` of `layer` (in request order) in `out`; work enqueued on
  // `stream` after this call sees every copy finished.
  void gather(int layer, std::span<const int> experts, std::vector<MxExpert>& out, Stream stream);
  // Copies the guessed experts of a layer not yet asked for (the next MoE layer's, from its router
  // on this layer's input) into slots the last request did not use, on the copy stream, so that
  // they land while the compute stream works; the next gather waits for them. Guesses stop when no
  // slot qualifies. Their slots are the first to go if the guess was wrong.
  void prefetch(int layer, std::span<const int> experts, Stream stream);
  // The share of recent copies ahead that their request used (a moving average over layers, 1
  // before any), and whether to copy ahead now: while that share is at least half, and otherwise
  // one opportunity in 16, to see whether the guesses got better.
  double ahead_precision() const { return ahead_precision_; }
  bool ahead_worthwhile();
  // Copies every expert of the given layers in (resident mode); throws when they do not fit.
  void preload(const std::vector<int>& layers, int experts_per_layer);

  int slots() const { return map_.slot_count(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  // What one slot takes for experts of these widths (the six tensors, each 256-byte aligned).
  static uint64_t slot_bytes_for(int latent, int inter);
  const VramTierCounters& counters() const { return c_; }
  void reset_counters() { c_ = {}; }
  // Forgets every resident expert (benchmarks of the streamed case); the next gather copies again.
  void evict_all();
  // Device pointers of experts 0..n-1 of `layer` when all of them are in VRAM (no counting, no
  // copies); false otherwise. They stay valid while epoch() is unchanged.
  bool resident_views(int layer, int n, std::vector<MxExpert>& out) const;
  // (layer, expert) of every expert in a slot now.
  std::vector<std::pair<int, int>> resident_experts() const;
  // Whether a slot holds (layer, expert) now (no use counted).
  bool holds(int layer, int expert) const { return map_.find(layer, expert) >= 0; }
  // Changes whenever a slot's expert is replaced or forgotten.
  uint64_t epoch() const { return epoch_; }
  ExpertSource& host() const { return host_; }
  // Copies straight from the pinned RAM tier: on by default (DELTAFIN_VRAM_DIRECT=off turns them
  // off: every miss then goes through staging, as for sources without an arena). On the H200 they
  // halved the streamed slice's ms/token with the same ids (docs/PERFORMANCE.md, session 8).
  void set_direct_copies(bool on) { direct_on_ = on; }
  bool direct_copies() const { return direct_on_; }
  // Why copies go through staging although the source has an arena ("" when they do not).
  const std::string& direct_note() const { return direct_note_; }

 private:
  MxExpert view(int slot) const;
  // Copies `missing` experts of `layer` from the host source into `slot_for` on the copy stream,
  // after the work queued on `stream` so far (ahead: a prefetch, not counted as misses). The host
  // batch goes to `batch`, which must live until the copies are done: true when any copy reads
  // the pinned RAM tier directly. On failure the slots are emptied and the error rethrown.
  bool fill(int layer, const std::vector<int>& missing, const std::vector<int>& slot_for, Stream stream, bool ahead,
            std::unique_ptr<ExpertBatch>& batch);
  // True when [p, p + n) lies in a pinned piece of the host arena, pinning that piece first.
  bool pinned(const uint8_t* p, uint64_t n);

  ExpertSource& host_;
  uint64_t part_bytes_[6] = {}, part_off_[6] = {}, slot_bytes_ = 0;
  ExpertSlotMap map_;
  uint64_t epoch_ = 0;
  VramTierCounters c_;
  int ahead_layer_ = -1;     // the layer the last copies ahead were for, until it asks
  uint64_t ahead_sent_ = 0;  // how many experts they were
  double ahead_precision_ = 1.0;
  uint64_t ahead_skipped_ = 0;
  bool direct_on_ = true;
  std::string direct_note_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace deltafin::cuda
