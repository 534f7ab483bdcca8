#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "stream/expert_location.h"

namespace deltafin {

// The six tensors of one routed expert, as stored (MXFP4 packed + E8M0 scales).
struct ExpertView {
  const uint8_t* w1_packed = nullptr;  // gate [moe_intermediate][latent/2]
  const uint8_t* w1_scale = nullptr;   // [moe_intermediate][latent/32]
  const uint8_t* w2_packed = nullptr;  // down [latent][moe_intermediate/2]
  const uint8_t* w2_scale = nullptr;
  const uint8_t* w3_packed = nullptr;  // up [moe_intermediate][latent/2]
  const uint8_t* w3_scale = nullptr;
};

struct ExpertCounters {
  uint64_t requests = 0;     // expert lookups
  uint64_t ram_hits = 0;     // served from the engine's RAM tier
  uint64_t disk_reads = 0;   // experts read from local disk (or page cache)
  uint64_t bytes_read = 0;   // bytes read from disk for experts
  uint64_t net_fetches = 0;  // experts fetched over the network (stream installs)
  uint64_t bytes_fetched = 0;
  uint64_t prefetch_issued = 0, prefetch_used = 0, prefetch_wasted = 0, prefetch_cancelled = 0;
  uint64_t prefetch_skipped = 0;  // guesses left unread: beyond what the disk reads while a layer computes
  uint64_t evictions = 0;
  // Bytes of requested experts that had to come from the disk (demand reads and prefetches that
  // were used): what a disk floor is made of. Prefetch reads never used are bytes_read beyond it.
  uint64_t bytes_needed = 0;
  // The next-layer expert prediction, per distance ([0]: one layer ahead, [1]: two): experts
  // guessed, guesses the layer then asked for, and what those layers asked for in all.
  uint64_t guessed[2] = {}, guessed_right[2] = {}, guessed_demand[2] = {};
  double read_seconds = 0;  // wall time with at least one read in flight
  // Reads in flight integrated over that time: over read_seconds, the mean queue depth the disk saw
  // (below the engine's depth when the reads come too few, or the thread that refills the queue late).
  double read_depth_seconds = 0;
  // Times the thread that reaps and resubmits the reads was preempted (involuntary context
  // switches): how often the compute took its core while reads were due.
  uint64_t io_preemptions = 0;
  double wait_seconds = 0;  // compute time spent waiting for a miss
};

// What happened between two readings of the counters (later - earlier).
inline ExpertCounters operator-(const ExpertCounters& a, const ExpertCounters& b) {
  ExpertCounters d;
  d.requests = a.requests - b.requests;
  d.ram_hits = a.ram_hits - b.ram_hits;
  d.disk_reads = a.disk_reads - b.disk_reads;
  d.bytes_read = a.bytes_read - b.bytes_read;
  d.net_fetches = a.net_fetches - b.net_fetches;
  d.bytes_fetched = a.bytes_fetched - b.bytes_fetched;
  d.prefetch_issued = a.prefetch_issued - b.prefetch_issued;
  d.prefetch_used = a.prefetch_used - b.prefetch_used;
  d.prefetch_wasted = a.prefetch_wasted - b.prefetch_wasted;
  d.prefetch_cancelled = a.prefetch_cancelled - b.prefetch_cancelled;
  d.prefetch_skipped = a.prefetch_skipped - b.prefetch_skipped;
  d.evictions = a.evictions - b.evictions;
  d.bytes_needed = a.bytes_needed - b.bytes_needed;
  for (int k = 0; k < 2; ++k) {
    d.guessed[k] = a.guessed[k] - b.guessed[k];
    d.guessed_right[k] = a.guessed_right[k] - b.guessed_right[k];
    d.guessed_demand[k] = a.guessed_demand[k] - b.guessed_demand[k];
  }
  d.read_seconds = a.read_seconds - b.read_seconds;
  d.read_depth_seconds = a.read_depth_seconds - b.read_depth_seconds;
  d.io_preemptions = a.io_preemptions - b.io_preemptions;
  d.wait_seconds = a.wait_seconds - b.wait_seconds;
  return d;
}

// Host memory that holds every view a source hands out, cut into units no view crosses (the RAM
// tier's slots). A GPU tier pins it and copies straight from it instead of through staging.
struct HostArena {
  const uint8_t* base = nullptr;
  uint64_t bytes = 0;
  uint64_t unit = 0;

  // A piece size of whole units, about `target` bytes (at least one unit): no view crosses one.
  uint64_t piece_bytes(uint64_t target) const { return unit ? std::max<uint64_t>(1, target / unit) * unit : 0; }
  uint64_t pieces(uint64_t piece) const { return piece ? (bytes + piece - 1) / piece : 0; }
  // The piece holding all of [p, p + n), or -1 when the range is empty or not inside one piece.
  int64_t piece_of(const uint8_t* p, uint64_t n, uint64_t piece) const {
    // As integers: p may point into another object.
    const uintptr_t b = reinterpret_cast<uintptr_t>(base), q = reinterpret_cast<uintptr_t>(p);
    if (!base || !piece || n == 0 || q < b || q - b >= bytes || n > bytes - (q - b)) return -1;
    const uint64_t first = (q - b) / piece, last = (q - b + n - 1) / piece;
    return first == last ? int64_t(first) : -1;
  }
};

// The experts of one request, handed out as they become ready (cached ones
// first), so compute on hits overlaps the reads of misses.
class ExpertBatch {
 public:
  virtual ~ExpertBatch() = default;
  // Blocks until one more requested expert is ready; returns its index in the
  // request and its bytes. Call exactly size-of-request times. The view returned
  // by the previous call may be released by this call: finish with it first.
  virtual std::pair<int, ExpertView> next() = 0;
  // The same for every expert ready now: blocks until at least one more is ready, then appends
  // each ready one (at most `max`) to `out` as (index in the request, view). The views of the
  // previous call (of either kind) may be released by this call. Computing a group in one pass
  // over the CPU's threads costs one hand-over instead of one per expert. The default hands out one.
  virtual void next_ready(std::vector<std::pair<int, ExpertView>>& out, int max) {
    if (max > 0) out.push_back(next());
  }
};

// Supplies routed-expert weights to the compute. A pass asks for all the
// experts one layer needs (the union over its rows) at once; the views stay
// valid until the batch is destroyed.
class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  // A source overrides at least one of these two; each defaults to the other.
  // request(): experts handed out as they become ready (hits first).
  virtual std::unique_ptr<ExpertBatch> request(int layer, std::span<const int> experts);
  // request_ahead(): the same for experts fetched before their layer asks (a guess the VRAM tier
  // copies ahead): the source may leave it out of its demand bookkeeping (counters, prediction
  // scoring, heat). Defaults to request().
  virtual std::unique_ptr<ExpertBatch> request_ahead(int layer, std::span<const int> experts) {
    return request(layer, experts);
  }
  // acquire(): all of a request at once, in request order.
  virtual void acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out);
  // A hint that `experts` of `layer` will be wanted soon, the most confident guess first; only called
  // when wants_prefetch(). A source may read only the first few. A later call for the same layer
  // replaces the guess: what it no longer names and is not read yet is dropped.
  virtual void prefetch(int layer, std::span<const int> experts) {}
  virtual bool wants_prefetch() const { return false; }
  // Whether (layer, expert) can be handed out now without a read (the RAM tier holds it); false
  // where the source cannot tell (a mapping, whose pages may be on disk). reports_in_memory():
  // whether in_memory() can ever say true, so a caller need not prepare guesses for nothing.
  virtual bool in_memory(int layer, int expert) const { return false; }
  virtual bool reports_in_memory() const { return false; }
  // How many layers ahead the compute should predict and prefetch (0: none).
  virtual int prefetch_layers() const { return wants_prefetch() ? 1 : 0; }
  // Ends a token: lets frequency-based policies age their counts.
  virtual void end_token() {}
  // The memory every view lies in, or an empty arena when views point elsewhere (mmap, shards).
  virtual HostArena host_arena() const { return {}; }
  virtual ExpertCounters counters() const = 0;
  virtual std::string describe() const = 0;
};

// Views of the six tensors of an expert whose location offsets are relative to `base`.
ExpertView view_at(const uint8_t* base, const ExpertLocation& L);

// A batch whose experts are all addressable already: handed out in request order.
class ReadyBatch : public ExpertBatch {
 public:
  explicit ReadyBatch(std::vector<ExpertView> v) : views_(std::move(v)) {}
  std::pair<int, ExpertView> next() override;
  void next_ready(std::vector<std::pair<int, ExpertView>>& out, int max) override;

 private:
  std::vector<ExpertView> views_;
  int next_ = 0;
};

}  // namespace deltafin
