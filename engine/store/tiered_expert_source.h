#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/expert_source.h"
#include "store/heat_map.h"
#include "store/read_engine.h"

namespace deltafin {

class Checkpoint;

enum class EvictionPolicy { Lru, LfuDecay, HeatSeeded };
const char* policy_name(EvictionPolicy p);
EvictionPolicy parse_policy(const std::string& s);  // throws Error listing the choices

struct StoreOptions {
  uint64_t ram_budget = 0;  // bytes for the RAM expert cache; 0 = from measured free memory
  EvictionPolicy policy = EvictionPolicy::LfuDecay;
  bool direct_io = true;     // O_DIRECT: bypass the page cache (it would hold a second copy)
  bool use_io_uring = true;  // else a pread thread pool
  int queue_depth = 0;       // reads in flight (chunks of `chunk_bytes`); 0 = the probed best depth
  uint64_t chunk_bytes = 2ull << 20;
  bool prefetch = true;      // router-lookahead prefetch of the next layers' experts
  int lookahead_layers = 2;  // how many layers ahead prefetch predicts
  // Bytes of guesses read per layer, the most confident first: -1 = what the disk would leave idle
  // between two layers' requests (measured: the wall time between them times the read rate, less
  // the layer's own misses); a number fixes it; INT64_MAX reads every guess.
  // A pass's first MoE layer, guessed from its own attention input, is read in full either way
  // (STREAMING.md "How many guesses are read").
  int64_t guess_bytes_per_layer = -1;
  // Chunks of guesses in flight at most (demand reads take the whole queue depth). A guess's read,
  // once submitted, cannot be taken back when the layer asks for other experts, and the layer's
  // demand reads wait behind it; a deep queue would commit that many guess chunks (QD 32 on an H100
  // host read 20-35 % more than decode needed, QD 7 7-13 %). 2 rather than 4: on a disk-bound VM at
  // QD 8 the disk stayed as busy, decode read up to 2 % fewer bytes and was 0.2-2.9 % faster
  // (docs/PERFORMANCE.md, "Disk-bound decode"). 0 = no limit but the queue depth.
  int guess_chunks_in_flight = 2;
  // Slots of the streaming buffer, reserved beside the cache budget for reads not yet kept (the
  // next layers' predicted experts, misses on their way to the compute). -1 = two layers' working
  // sets, which K3Model fills in from top-k; a source built directly with -1 gets none.
  int stream_slots = -1;
  bool lock_memory = true;  // mlock the cache when the limit allows
  std::string heat_path;    // persistent heat histogram ("" = none)
  double lfu_half_life_tokens = 64;
  size_t max_slots = 0;  // cap on cache slots besides the byte budget (0 = none)
};

// The queue depth the disk under the shards wants with these options, probed once per device and
// process over random experts of `locations` (QueueDepthProbe); `how` gets the measurements.
int best_queue_depth(const Checkpoint& ck, const std::vector<std::vector<ExpertLocation>>& locations, bool direct_io,
                     bool use_io_uring, uint64_t chunk_bytes, std::string* how = nullptr);

// RAM cache budget derived from MemAvailable minus a safety margin.
uint64_t default_ram_budget(uint64_t expert_slot_bytes);

// The engine-owned RAM tier over the local disk: experts read by offset
// straight from the shards (aligned O_DIRECT supersets through io_uring or a
// pread pool, in disk-offset order), kept in fixed slots evicted by a measured
// policy, prefetched from router lookahead with demand reads always first.
//
// Every slot is a cache slot (kept) or a streaming slot. Reads always land in a streaming slot;
// when the compute releases an expert the cache policy decides whether it is kept, and keeping it
// only swaps the two slots' roles (the policy's victim becomes a streaming slot, its bytes still
// good for a hit until reused). So the cache budget decides what stays, and the streaming buffer
// is always there for the next layers' reads, however small the budget.
class TieredExpertSource : public ExpertSource {
 public:
  TieredExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations, StoreOptions opts);
  ~TieredExpertSource() override;

  std::unique_ptr<ExpertBatch> request(int layer, std::span<const int> experts) override;
  // Not counted as requests or hits, not scored against the guesses, not added to the heat map,
  // and not a layer boundary for the guess budget: only the reads and the pins of a request.
  std::unique_ptr<ExpertBatch> request_ahead(int layer, std::span<const int> experts) override;
  void prefetch(int layer, std::span<const int> experts) override;
  bool wants_prefetch() const override { return opts_.prefetch; }
  bool in_memory(int layer, int expert) const override { return cached(layer, expert); }
  bool reports_in_memory() const override { return true; }
  int prefetch_layers() const override { return opts_.prefetch ? opts_.lookahead_layers : 0; }
  void end_token() override;
  ExpertCounters counters() const override;
  std::string describe() const override;
  HostArena host_arena() const override { return {arena_, arena_bytes_, slot_bytes_}; }

  // Loads the hottest experts of the heat map until the cache is full (or `limit` experts).
  size_t warm_from_heat(size_t limit = SIZE_MAX);
  void save_heat() const;
  const HeatMap& heat() const { return heat_; }
  size_t slot_count() const { return slots_.size(); }
  int cache_slots() const { return n_cache_; }
  int stream_slots() const { return n_stream_; }
  int queue_depth() const { return engine_->depth(); }
  // Guesses waiting for a free streaming slot (tests observe the buffer with it).
  size_t pending_guesses() const;
  uint64_t slot_bytes() const { return slot_bytes_; }
  bool memory_locked() const { return locked_; }
  bool cached(int layer, int expert) const;
  const char* io_name() const { return engine_->name(); }
  bool direct_io() const { return direct_; }
  // Holds back read submission (tests use it to observe queued work deterministically).
  void pause_io(bool paused);
  // While paused, lets `chunks` more reads be submitted; and the reads in flight now (tests).
  void step_io(int chunks);
  int reads_in_flight() const;
  // The most reads, and the most reads of guesses, that were ever in flight at once.
  int peak_in_flight() const;
  int peak_guesses_in_flight() const;

 private:
  friend class TieredBatch;
  struct Slot {
    int layer = -1, expert = -1;
    enum State { Empty, Queued, Loading, Ready, Failed } state = Empty;
    int pins = 0;
    bool prefetched = false;  // loaded by prefetch and not yet used
    bool kept = false;        // a cache slot (else a streaming slot)
    uint64_t last_use = 0;
    int chunks_left = 0;
    // A wrong guess caught partly read: its unsubmitted chunks were dropped and it left the index;
    // the slot is free again once the chunks in flight land.
    bool abandoned = false;
    std::string error;
    ExpertView view;
  };
  struct Chunk {
    int slot = -1;
    ReadJob job;
    uint64_t need = 0;   // bytes that must arrive (less than job.bytes only at the end of a file)
    bool guess = false;  // submitted from the guess queue (counted in guesses_in_flight_)
  };
  uint64_t key(int layer, int expert) const { return uint64_t(layer) * experts_ + expert; }
  int find_victim_locked();  // the cache policy's victim among unpinned kept slots
  int stream_target_locked(bool demand);
  void start_load_locked(int slot, int layer, int expert, bool demand);
  void start_loads_locked(int layer, std::vector<int> experts, bool demand, std::vector<int>* slots);
  void release_locked(int slot);
  void promote_locked(int slot);
  void cancel_stale_prefetch_locked(int layer, std::span<const int> demand);
  void cancel_guess_locked(int slot);
  // Takes a slot's chunks out of the guess queue; their bytes (and, in `dropped`, their number).
  uint64_t drop_queued_chunks_locked(int slot, int* dropped = nullptr);
  // A wrong guess partly read: drops its unsubmitted chunks, leaves the index, frees the slot once
  // the chunks in flight land.
  void stop_reading_locked(int slot);
  std::unique_ptr<ExpertBatch> request_locked(int layer, std::span<const int> experts, bool ahead);
  void fill_guesses_locked();
  void sort_prefetch_queue_locked();
  void score_guesses_locked(int layer, std::span<const int> demand);
  double decayed_score_locked(const Slot& s) const;
  void touch_locked(Slot& s, bool count = true);
  void io_loop();
  void evict_locked(int slot);

  const Checkpoint& ck_;
  std::vector<std::vector<ExpertLocation>> loc_;
  StoreOptions opts_;
  int experts_ = 0;
  std::vector<int> fds_;
  std::unique_ptr<ReadEngine> engine_;
  uint8_t* arena_ = nullptr;
  uint64_t arena_bytes_ = 0, slot_bytes_ = 0;
  int n_cache_ = 0, n_stream_ = 0, kept_ = 0;
  bool locked_ = false, direct_ = false;
  std::string io_note_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_, io_cv_;
  std::vector<Slot> slots_;
  std::unordered_map<uint64_t, int> index_;
  std::deque<Chunk> demand_q_, prefetch_q_;
  int in_flight_ = 0;
  int guesses_in_flight_ = 0;  // of in_flight_, chunks submitted from the guess queue
  int io_allowance_ = 0;       // submissions allowed while paused (step_io)
  int peak_in_flight_ = 0, peak_guesses_in_flight_ = 0;
  int demand_waiting_ = 0;  // requested experts of live batches still without a slot: they go before guesses
  int cur_layer_ = -1;      // the layer last requested: guesses are for the layers after it
  // The guess budget: bytes of guesses still to be read before the next request, and what it is
  // measured from (per layer, the wall time from its request to the next request, seconds, smoothed).
  double guess_budget_left_ = 1e300;
  std::vector<double> interval_s_;
  int last_layer_ = -1;  // the layer of the last request (-1 before the first)
  std::chrono::steady_clock::time_point last_request_{};
  void renew_guess_budget_locked(int layer, double demand_bytes);
  struct Guess {
    int layer, expert;
  };
  std::vector<Guess> pending_;              // guessed, not yet given a slot (the buffer is full)
  std::vector<std::vector<int>> guess_[2];  // per layer: the latest guess made 1 / 2 layers ahead
  bool stop_ = false, paused_ = false;
  uint64_t tick_ = 0;
  double token_clock_ = 0;
  // By (layer, expert), resident or not: the uses the count policies score (decayed by token_clock_
  // from score_tick_). Kept apart from the slots, so an expert read again after the cache let it
  // go keeps its count: one that turns hot outscores one that was hot only when the cache filled.
  std::vector<double> score_, score_tick_;
  HeatMap heat_;
  ExpertCounters c_;
  std::thread io_;
};

}  // namespace deltafin
