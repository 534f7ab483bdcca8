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
#include "stream/stream_presence.h"

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
class StreamExpertSource : public ExpertSource {
 public:
  StreamExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations, const std::string& model_root,
                     StreamCacheOptions options);
  ~StreamExpertSource() override;

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
  uint64_t evict_to(uint64_t target_bytes);  // returns bytes evicted
  uint64_t cached_bytes() const;
  size_t cached_experts() const;
  uint64_t cap_bytes() const { return cap_; }
  int layer_count() const { return static_cast<int>(loc_.size()); }
  int experts_in_layer(int layer) const { return static_cast<int>(loc_.at(static_cast<size_t>(layer)).size()); }
  std::vector<CachedExpert> list() const;
  // Checks present experts' bytes are not holes and hashes every complete shard; returns problems.
  std::vector<std::string> verify();

 private:
  void ensure_present(int layer, std::span<const int> experts);
  void evict_one_locked(int layer, int expert);
  void punch(int layer, int expert);
  void after_fetch_check_shards(const std::vector<uint32_t>& shards);
  bool shard_complete(uint32_t shard) const;
  int shard_fd(uint32_t shard);
  const ExpertLocation& loc(int layer, int expert) const;

  const Checkpoint& ck_;
  std::vector<std::vector<ExpertLocation>> loc_;
  std::string root_;
  StreamMarker marker_;
  StreamCacheOptions opt_;
  std::unique_ptr<HubClient> hub_;
  uint64_t cap_ = 0;
  std::string presence_path_;
  StreamPresence presence_;
  uint64_t cached_ = 0;
  std::vector<int> fds_;
  std::vector<uint64_t> shard_spine_bytes_, shard_expert_bytes_;
  std::vector<std::vector<uint8_t>> checked_;
  mutable std::mutex mu_;
  std::atomic<uint64_t> requests_{0}, hits_{0}, fetches_{0}, bytes_fetched_{0}, bytes_read_{0};
};

// A stream install's checkpoint together with its cache, for tools that work on
// the cache without loading a model (deltafin cache, the GUI's cache browser).
struct StreamCache {
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<StreamExpertSource> source;
};
StreamCache open_stream_cache(const std::string& model_root, StreamCacheOptions options);

}  // namespace deltafin
