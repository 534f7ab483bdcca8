#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "install/hub_client.h"
#include "model/checkpoint.h"
#include "install/range_fetch.h"
#include "store/expert_source.h"
#include "stream/stream_marker.h"
#include "stream/shared_stream_presence.h"

namespace deltafin {

class Checkpoint;

struct StreamCacheOptions {
  std::string hub_url;     // empty: the one recorded by setup --stream
  std::string token;       // for gated repos
  bool offline = false;    // never touch the network; missing experts are an error naming them
  uint64_t cap_bytes = 0;  // 0: the cap recorded by setup --stream
  long stall_timeout_s = 60;
  FetchTuning tuning;
  int fetch_threads = 4;

  // For loaders that take no options: DELTAFIN_OFFLINE=1, DELTAFIN_HUB_URL,
  // DELTAFIN_STREAM_CACHE_SIZE (bytes), HF_TOKEN.
  static StreamCacheOptions from_env();
};

// Routed experts of a stream install: served from the sparse local shard files
// when present, fetched by HTTP Range on first use otherwise, with a size cap
// kept by punching holes for the least recently used experts.
//
// Several sources (in one process or many) may use one install: presence lives
// in the shared table (SharedStreamPresence). An expert is pinned and confirmed
// present under the table lock before its views are handed out, its bytes are
// checked not to be a hole, and it stays pinned (so nobody evicts it) until its
// batch is destroyed, or for acquire(), until the next acquire() begins or the source ends.
class StreamExpertSource : public ExpertSource {
 public:
  StreamExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations,
                     const std::string& model_root, StreamCacheOptions options);
  ~StreamExpertSource() override;

  std::unique_ptr<ExpertBatch> request(int layer, std::span<const int> experts) override;
  void acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) override;
  void prefetch(int layer, std::span<const int> experts) override;
  ExpertCounters counters() const override;
  std::string describe() const override;

  // Cache management, for `deltafin cache` and the GUI's cache browser.
  struct CachedExpert {
    int layer = 0, expert = 0;
    uint64_t bytes = 0, last_use = 0;
  };
  void warm(int layer, std::span<const int> experts);
  // Evicts coldest first down to target_bytes; returns bytes evicted. Experts pinned by
  // another source (a running engine) are kept; `kept_in_use` counts them.
  uint64_t evict_to(uint64_t target_bytes, size_t* kept_in_use = nullptr);
  uint64_t cached_bytes() const;
  size_t cached_experts() const;
  uint64_t cap_bytes() const { return cap_; }
  int layer_count() const { return static_cast<int>(loc_.size()); }
  int experts_in_layer(int layer) const { return static_cast<int>(loc_.at(static_cast<size_t>(layer)).size()); }
  std::vector<CachedExpert> list() const;
  // Checks present experts' bytes are not holes and hashes every complete shard; returns problems.
  // With fetch_missing, every shard is first completed from the hub and checked (verify_shard).
  std::vector<std::string> verify(bool fetch_missing = false);
  // Integrity of each shard: a shard is checked against the Hub's SHA-256 the moment its last
  // byte arrives; until then the bytes it holds are unverified.
  struct ShardIntegrity {
    std::string name;
    uint64_t size = 0, present_bytes = 0;
    bool complete = false, verified = false;
  };
  std::vector<ShardIntegrity> shard_integrity() const;
  // Fetches whatever shard `shard` lacks (its experts pinned meanwhile, so the cap may be
  // exceeded until the check ends) and checks it; throws Error on a mismatch.
  void verify_shard(uint32_t shard);
  // Experts whose bytes were found to be a hole although the table said present (and were fetched again).
  uint64_t holes_caught() const { return holes_caught_; }

 private:
  using Slot = std::pair<int, int>;
  std::vector<ExpertView> serve(int layer, std::span<const int> experts, std::vector<Slot>& pinned, bool want_views);
  uint64_t make_room_locked(uint64_t limit, uint64_t need, int layer, std::span<const int> keep, size_t* kept_in_use);
  uint64_t cached_bytes_locked() const;
  void drop_locked(const std::vector<Slot>& victims);
  void check_completed_shards(const std::vector<uint32_t>& shards);
  bool shard_complete_locked(uint32_t shard) const;
  bool bytes_missing(const ExpertLocation& L);
  void fetch(int layer, const std::vector<int>& missing);
  void unpin_all(std::vector<Slot>& pins);
  void punch(int layer, int expert);
  int shard_fd(uint32_t shard);
  const ExpertLocation& loc(int layer, int expert) const;

  const Checkpoint& ck_;
  std::vector<std::vector<ExpertLocation>> loc_;
  std::string root_;
  StreamMarker marker_;
  StreamCacheOptions opt_;
  std::unique_ptr<HubClient> hub_;
  uint64_t cap_ = 0;
  std::unique_ptr<SharedStreamPresence> presence_;
  std::vector<int> fds_;
  std::vector<uint64_t> shard_spine_bytes_, shard_expert_bytes_;
  std::vector<std::vector<Slot>> shard_slots_;
  std::vector<std::vector<uint8_t>> checked_;
  std::vector<Slot> held_;  // pins of the last acquire()
  mutable std::mutex mu_;
  std::atomic<uint64_t> requests_{0}, hits_{0}, fetches_{0}, bytes_fetched_{0}, bytes_read_{0}, evictions_{0},
      holes_caught_{0};
};

// A stream install's checkpoint together with its cache, for tools that work on
// the cache without loading a model (deltafin cache, the GUI's cache browser).
struct StreamCache {
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<StreamExpertSource> source;
};
StreamCache open_stream_cache(const std::string& model_root, StreamCacheOptions options);

}  // namespace deltafin
