#pragma once
// The CPU forward's spine as the placement plan puts it: each layer (and lm_head) either read in
// place from the mapped shards, copied once into engine-owned RAM, or streamed from disk per pass
// with direct I/O into one of two buffers (the next streamed unit loads while the current one
// computes). Streaming never goes through the page cache, so a spine larger than the RAM budget is
// read once per pass at the disk's rate instead of thrashing.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/k3_config.h"
#include "runtime/k3_weights.h"
#include "store/read_engine.h"

namespace deltafin {

class Checkpoint;

enum class SpineHome { Mapped, Owned, Streamed };

struct SpinePlacement {
  std::vector<SpineHome> layers;  // one per layer
  SpineHome lm_head = SpineHome::Mapped;
  bool direct_io = true;  // O_DIRECT for streamed and owned reads (buffered where refused)
  bool use_io_uring = true;
  int queue_depth = 8;
  uint64_t chunk_bytes = 4ull << 20;
  bool any_streamed() const;
};

struct SpineStreamStats {
  uint64_t units_streamed = 0, bytes_streamed = 0;
  double wait_seconds = 0;  // compute time spent waiting for a streamed unit
  double read_seconds = 0;  // time the loader spent reading
};

class SpineStreamer {
 public:
  // Rebinds `w` in place: owned units' matrices and the routers of streamed layers point into
  // engine-owned memory afterwards (read here, once). Streamed units' other matrices must only be
  // used through acquire().
  // `say` gets the load's progress (a line per tenth of the owned bytes, when they are 8 GB or more).
  SpineStreamer(const Checkpoint& ck, const K3Config& c, K3Weights& w, SpinePlacement p,
                const std::function<void(const std::string&)>& say = {});
  ~SpineStreamer();
  SpineStreamer(const SpineStreamer&) = delete;
  SpineStreamer& operator=(const SpineStreamer&) = delete;

  bool streamed(int layer) const { return p_.layers.at(size_t(layer)) == SpineHome::Streamed; }
  bool lm_head_streamed() const { return p_.lm_head == SpineHome::Streamed; }
  // A streamed layer's weights for this pass, valid until release(l); blocks until its bytes are
  // in, then starts loading the next streamed unit into the other buffer. Other layers are used
  // through the bound weights (K3Weights), which point at their home.
  const LayerWeights& acquire(int layer);
  void release(int layer);
  const Mat& acquire_lm_head();
  void release_lm_head();

  const SpinePlacement& placement() const { return p_; }
  SpineStreamStats stats() const;
  uint64_t owned_bytes() const { return owned_bytes_; }
  // Of those, the bytes copied from the page cache at load (units a recent run left there) rather
  // than read from disk.
  uint64_t owned_from_cache_bytes() const { return owned_from_cache_bytes_; }
  // Unit u's engine-owned buffer (u = layers: lm_head), where its bound matrices point; {nullptr, 0}
  // unless the unit is owned. A GPU that streams the unit copies from it (after pinning it) instead
  // of keeping a second copy.
  struct Span {
    const uint8_t* base = nullptr;
    uint64_t bytes = 0;
  };
  Span owned_span(int unit) const {
    return unit >= 0 && size_t(unit) < unit_spans_.size() ? unit_spans_[size_t(unit)] : Span{};
  }
  uint64_t buffer_bytes() const { return slot_bytes_ * slots_.size(); }
  std::string describe() const;

 private:
  struct Region {
    Mat* field = nullptr;  // within a unit's weights template
    uint32_t shard = 0;
    uint64_t offset = 0, bytes = 0;  // unaligned, in the shard file
    uint64_t dst = 0;                // aligned offset in the unit's buffer
  };
  struct Unit {
    std::vector<Region> regions;
    uint64_t buffer_bytes = 0;
    LayerWeights layer;  // template (the bound weights); Mats rebased when loaded
    Mat lm_head;
  };
  struct Slot {
    uint8_t* buf = nullptr;
    int unit = -1;
    enum State { Empty, Loading, Ready, Failed } state = Empty;
    int pins = 0;
    std::string error;
    LayerWeights layer;
    Mat lm_head;
  };

  int lm_head_unit() const { return static_cast<int>(units_.size()) - 1; }
  const Slot& acquire_unit(int unit);
  void release_unit(int unit);
  int next_streamed_after(int unit) const;
  void start_load_locked(int slot, int unit);
  void loader_loop();
  void read_regions(const Unit& u, uint8_t* buf);  // direct reads
  void load_regions(const Unit& u, uint8_t* buf);  // at load: from the page cache when all there, else read
  void rebase(Unit& u, uint8_t* buf, LayerWeights* layer, Mat* lm_head) const;

  const Checkpoint& ck_;
  SpinePlacement p_;
  std::vector<Unit> units_;  // layers, then lm_head
  std::vector<int> fds_;
  std::vector<int> buffered_fds_;  // page-cache reads of units found cached at load (opened then)
  bool direct_ = false;
  std::string io_note_;
  std::unique_ptr<ReadEngine> engine_;
  std::vector<uint8_t*> owned_;  // owned unit buffers and router copies
  std::vector<uint64_t> owned_sizes_;
  std::vector<Span> unit_spans_;  // [layers + 1]
  uint64_t owned_bytes_ = 0, owned_from_cache_bytes_ = 0, slot_bytes_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<std::pair<int, int>> jobs_;  // (slot, unit) waiting for the loader
  bool stop_ = false;
  SpineStreamStats stats_;
  std::thread loader_;
};

}  // namespace deltafin
