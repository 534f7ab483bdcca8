#pragma once
// Session states at turn boundaries kept on disk (zstd, see state_snapshot.h), so a restarted
// server or app resumes a long conversation without prefilling it again. One folder per model
// fingerprint; files are named by the hash of their token prefix; the folder is kept under a
// byte budget by evicting the least recently used snapshot.
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/k3_config.h"
#include "runtime/k3_state.h"

namespace deltafin::serve {

class SnapshotStore {
 public:
  // Creates `dir` if needed and indexes the snapshots already in it.
  SnapshotStore(std::string dir, uint64_t model_fingerprint, uint64_t max_bytes);

  // Length of the longest stored prefix of `ids` no longer than `max_len` (0 = none).
  size_t best_prefix(std::span<const int32_t> ids, size_t max_len) const;
  // Loads the snapshot of ids[0..len); nullopt (and the file removed) when it is unreadable.
  std::optional<K3State> load(std::span<const int32_t> ids, size_t len, const K3Config& cfg);
  // Saves a state for `ids` (a no-op when that prefix is already stored), then evicts to budget.
  void save(std::span<const int32_t> ids, const K3State& state);

  uint64_t bytes() const;
  size_t count() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    std::string path;
    uint64_t prefix_hash = 0;
    size_t n_ids = 0;
    uint64_t bytes = 0;
    uint64_t last_use = 0;
  };
  std::string path_for(uint64_t hash, size_t n) const;
  void evict_locked();

  std::string dir_;
  uint64_t fingerprint_, max_bytes_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace deltafin::serve
