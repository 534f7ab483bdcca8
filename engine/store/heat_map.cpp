#include "store/heat_map.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace deltafin {

namespace {
constexpr char kMagic[8] = {'D', 'F', 'H', 'E', 'A', 'T', '0', '1'};
}

uint64_t HeatMap::total() const {
  uint64_t t = 0;
  for (auto c : counts_) t += c;
  return t;
}

std::vector<std::pair<int, int>> HeatMap::hottest() const {
  std::vector<std::pair<int, int>> v;
  for (int l = 0; l < layers_; ++l)
    for (int e = 0; e < experts_; ++e)
      if (count(l, e)) v.emplace_back(l, e);
  std::stable_sort(v.begin(), v.end(),
                   [&](auto a, auto b) { return count(a.first, a.second) > count(b.first, b.second); });
  return v;
}

bool HeatMap::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  char magic[8];
  int32_t dims[2];
  if (!f.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return false;
  if (!f.read(reinterpret_cast<char*>(dims), sizeof dims) || dims[0] != layers_ || dims[1] != experts_) return false;
  std::vector<uint32_t> c(counts_.size());
  if (!f.read(reinterpret_cast<char*>(c.data()), std::streamsize(c.size() * 4))) return false;
  counts_ = std::move(c);
  return true;
}

void HeatMap::save(const std::string& path) const {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    const int32_t dims[2] = {layers_, experts_};
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(dims), sizeof dims);
    f.write(reinterpret_cast<const char*>(counts_.data()), std::streamsize(counts_.size() * 4));
    if (!f) throw Error("cannot write the expert heat map " + tmp, "check free space and permissions");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace deltafin
