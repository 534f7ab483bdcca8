#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace deltafin {

// <model-root>/.deltafin/stream.json: written by `deltafin setup --stream`,
// read by the loader to pick the streaming expert source. Documented in docs/INSTALL.md.
struct StreamMarker {
  struct Shard {
    std::string name;
    uint64_t size = 0;
    std::string sha256;
  };
  std::string hub_url, repo, revision;
  uint64_t cap_bytes = 0;     // expert cache size cap
  std::vector<Shard> shards;  // in checkpoint order

  static std::string path(const std::string& model_root);
  static std::string presence_path(const std::string& model_root);
  void save(const std::string& model_root) const;
  static StreamMarker load(const std::string& model_root);
  // The marker of the model root, if it is a stream install.
  static std::optional<StreamMarker> find(const std::string& model_root);
};

}  // namespace deltafin
