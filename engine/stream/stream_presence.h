#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin {

// Which parts of a stream install's sparse shard files hold real bytes: the
// spine of each shard, and each routed expert (with a use tick for eviction,
// 0 = absent). Saved atomically; a byte range is marked present only after its
// data is on disk, and marked absent before its hole is punched, so a crash
// can lose cached experts but never serve a hole as data.
class StreamPresence {
 public:
  StreamPresence() = default;
  StreamPresence(int layers, int experts, int shards);
  static StreamPresence load(const std::string& path);  // throws Error when damaged
  void save(const std::string& path) const;

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int shards() const { return static_cast<int>(spine_.size()); }

  bool spine_done(int shard) const { return spine_.at(static_cast<size_t>(shard)) != 0; }
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
