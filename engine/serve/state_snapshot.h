#pragma once
// A K3 session state at a token prefix, as a file: a small uncompressed header (magic, model
// fingerprint, prefix hash, the prefix ids) followed by one zstd frame holding every layer's state.
// The header alone is enough to index a folder of snapshots without decompressing anything.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/k3_config.h"
#include "runtime/k3_state.h"

namespace deltafin::serve {

struct SnapshotHeader {
  uint64_t model_fingerprint = 0;
  uint64_t prefix_hash = 0;
  std::vector<int32_t> ids;
};

// Writes atomically (temporary file, then rename). Throws Error when the disk refuses.
void write_state_snapshot(const std::string& path, uint64_t model_fingerprint, std::span<const int32_t> ids,
                          const K3State& state, int zstd_level = 3);

// Reads the header; false for a file that is not a snapshot or is truncated.
bool read_snapshot_header(const std::string& path, SnapshotHeader& out);

// Whether the file is a snapshot of an earlier format of ours (an older magic): outdated, to delete.
bool is_outdated_snapshot(const std::string& path);

// Reads a whole snapshot, checking every size against `cfg` before allocating it. Throws Error
// for a corrupt or foreign file.
K3State read_state_snapshot(const std::string& path, const K3Config& cfg, SnapshotHeader& header);

// Identifies the weights a state belongs to: config, index and every shard's name, size and mtime.
uint64_t model_fingerprint(const std::string& model_root);

}  // namespace deltafin::serve
