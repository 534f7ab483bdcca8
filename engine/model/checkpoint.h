#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "model/safetensors.h"

namespace deltafin {

// model.safetensors.index.json: which shard holds each tensor.
struct CheckpointIndex {
  std::vector<std::string> shards;                         // shard file names, sorted
  std::unordered_map<std::string, uint32_t> tensor_shard;  // tensor name -> index into shards
  uint64_t total_size = 0;                                 // metadata.total_size when present

  static CheckpointIndex parse(const std::string& json_text, const std::string& origin);
  static CheckpointIndex load(const std::string& path);
};

struct CatalogEntry {
  uint32_t shard = 0;
  const TensorInfo* info = nullptr;
  uint64_t file_offset() const;  // absolute offset of the first byte inside the shard file
  uint64_t shard_data_start = 0;
};

// All tensors of a checkpoint folder across its shards. Shards are mapped
// lazily, so opening a 1.5 TB checkpoint reads only headers.
class Checkpoint {
 public:
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<std::string>& shard_names() const { return shard_names_; }
  const SafetensorsHeader& shard_header(uint32_t i) const { return headers_[i]; }
  std::string shard_path(uint32_t i) const { return dir_ + "/" + shard_names_[i]; }

  const CatalogEntry* find(const std::string& name) const;
  size_t tensor_count() const { return entries_.size(); }
  std::vector<std::string> tensor_names() const;

  // Bytes of a tensor inside the memory-mapped shard.
  const uint8_t* data(const CatalogEntry& e) const;
  const MappedFile& mapping(uint32_t shard) const;

 private:
  std::string dir_;
  std::vector<std::string> shard_names_;
  std::vector<SafetensorsHeader> headers_;
  std::unordered_map<std::string, CatalogEntry> entries_;
  mutable std::vector<std::unique_ptr<MappedFile>> maps_;
  mutable std::mutex map_mu_;
};

}  // namespace deltafin
