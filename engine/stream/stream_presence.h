#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin {

// Bounds on a presence table, checked wherever one is planned (a hub's
// config.json), created or read: the table is layers x experts ticks of 8 bytes.
inline constexpr uint32_t kMaxStreamLayers = 4096;
inline constexpr uint32_t kMaxStreamExperts = 65536;
inline constexpr uint64_t kMaxStreamSlots = 1ull << 22;  // a 32 MiB table; K3 needs 92 x 896
// Throws Error (naming `origin`) when the shape is outside those bounds.
void check_stream_table_shape(uint64_t layers, uint64_t experts, uint64_t shards, const std::string& origin);

// Which parts of a stream install's sparse shard files hold real bytes: the
// spine of each shard, and each routed expert (with a use tick for eviction,
// 0 = absent). A byte range is marked present only after its data is on disk,
// and marked absent before its hole is punched, so a crash can lose cached
// experts but never serve a hole as data.
//
// This is a snapshot of the file, for setup's planning, doctor and tests;
// running sources share the file itself through SharedStreamPresence.
class StreamPresence {
 public:
  StreamPresence() = default;
  StreamPresence(int layers, int experts, int shards);
  static StreamPresence load(const std::string& path);  // throws Error when damaged
  // Writes the whole table by rename, under the table lock (see SharedStreamPresence).
  void save(const std::string& path) const;
  // Throws Error unless `data` is a table whose size matches its header.
  static void check_header(const uint8_t* data, size_t size, const std::string& path);

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int shards() const { return static_cast<int>(spine_.size()); }

  bool spine_done(int shard) const { return spine_.at(static_cast<size_t>(shard)) != 0; }
  // 0 spine missing, 1 spine present, 2 the whole shard present and verified against the Hub.
  uint8_t shard_state(int shard) const { return spine_.at(static_cast<size_t>(shard)); }
  void set_spine_done(int shard, bool done) { spine_.at(static_cast<size_t>(shard)) = done ? 1 : 0; }
  bool all_spine_done() const;

  bool present(int layer, int expert) const { return tick_.at(idx(layer, expert)) != 0; }
  uint64_t last_use(int layer, int expert) const { return tick_.at(idx(layer, expert)); }
  void touch(int layer, int expert) { tick_.at(idx(layer, expert)) = ++clock_; }
  void clear(int layer, int expert) { tick_.at(idx(layer, expert)) = 0; }
  size_t present_count() const;

 private:
  size_t idx(int layer, int expert) const;
  int layers_ = 0, experts_ = 0;
  std::vector<uint8_t> spine_;
  std::vector<uint64_t> tick_;
  uint64_t clock_ = 0;
};

}  // namespace deltafin
