#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stream/expert_location.h"

namespace deltafin {

class Checkpoint;
struct SafetensorsHeader;

// `...layers.{L}.block_sparse_moe.experts.{E}.{w1,w2,w3}.{weight_packed,weight_scale}`;
// part is the index in ExpertView order (w1 packed, w1 scale, w2 packed, ...).
struct ExpertTensorName {
  int layer = 0, expert = 0, part = 0;
};
std::optional<ExpertTensorName> parse_expert_tensor_name(std::string_view name);

// What a stream install downloads of one shard up front: the header and every
// tensor that is not a routed expert. Vision tensors are included although the
// engine never reads them, so that every shard can become complete and be
// checked against the Hub's SHA-256.
struct ShardSpine {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // absolute [begin, end), merged, sorted
  uint64_t bytes = 0;
  bool has_experts = false;
};
ShardSpine shard_spine(const SafetensorsHeader& header);

// The routed-expert geometry a stream install needs, from config.json and the
// checkpoint index alone (planning happens before any shard is downloaded).
struct StreamShape {
  int layers = 0, experts = 0;    // presence index dimensions
  uint64_t expert_count = 0;      // experts actually stored in the checkpoint
  uint64_t bytes_per_expert = 0;  // six MXFP4 tensors
  uint64_t expert_bytes() const { return expert_count * bytes_per_expert; }
};
StreamShape stream_shape(const std::string& config_json, const std::vector<std::string>& tensor_names,
                         const std::string& origin);

// locations[layer][expert] from the shard headers; rows of layers without
// routed experts are empty. Throws Error when an expert lacks one of its six tensors.
std::vector<std::vector<ExpertLocation>> expert_locations(const Checkpoint& ck, int layers, int experts);

}  // namespace deltafin
