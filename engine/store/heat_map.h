#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin {

// How often each (layer, expert) was demanded, persisted between runs so a new
// process can seed its caches with the experts this user's prompts favour.
class HeatMap {
 public:
  HeatMap() = default;
  HeatMap(int layers, int experts) : layers_(layers), experts_(experts), counts_(size_t(layers) * experts, 0) {}
  void add(int layer, int expert) { ++counts_[size_t(layer) * experts_ + expert]; }
  uint32_t count(int layer, int expert) const { return counts_[size_t(layer) * experts_ + expert]; }
  int layers() const { return layers_; }
  int experts() const { return experts_; }
  uint64_t total() const;
  // (layer, expert) pairs ordered hottest first; pairs never seen are left out.
  std::vector<std::pair<int, int>> hottest() const;

  // Loads `path` if it exists and has these dimensions; returns whether it did.
  bool load(const std::string& path);
  // Writes atomically (path.tmp then rename); throws Error on failure.
  void save(const std::string& path) const;

 private:
  int layers_ = 0, experts_ = 0;
  std::vector<uint32_t> counts_;
};

}  // namespace deltafin
