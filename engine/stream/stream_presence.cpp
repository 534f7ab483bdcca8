#include "stream/stream_presence.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "model/model_root.h"

namespace deltafin {

namespace {
constexpr char kMagic[8] = {'D', 'F', 'S', 'T', 'R', 'M', '0', '1'};

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

StreamPresence::StreamPresence(int layers, int experts, int shards)
    : layers_(layers), experts_(experts), spine_(static_cast<size_t>(shards), 0),
      tick_(static_cast<size_t>(layers) * static_cast<size_t>(experts), 0) {}

size_t StreamPresence::idx(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= experts_)
    throw Error("stream cache: layer " + std::to_string(layer) + " expert " + std::to_string(expert) + " is out of range");
  return static_cast<size_t>(layer) * static_cast<size_t>(experts_) + static_cast<size_t>(expert);
}

bool StreamPresence::all_spine_done() const {
  return std::all_of(spine_.begin(), spine_.end(), [](uint8_t v) { return v != 0; });
}

size_t StreamPresence::present_count() const {
  return static_cast<size_t>(std::count_if(tick_.begin(), tick_.end(), [](uint64_t t) { return t != 0; }));
}

void StreamPresence::save(const std::string& path) const {
  std::string s(kMagic, sizeof kMagic);
  put<uint32_t>(s, static_cast<uint32_t>(layers_));
  put<uint32_t>(s, static_cast<uint32_t>(experts_));
  put<uint32_t>(s, static_cast<uint32_t>(spine_.size()));
  put<uint64_t>(s, clock_);
  s.append(reinterpret_cast<const char*>(spine_.data()), spine_.size());
  s.append(reinterpret_cast<const char*>(tick_.data()), tick_.size() * sizeof(uint64_t));
  write_file_atomically(path, s);
}

StreamPresence StreamPresence::load(const std::string& path) {
  const std::string s = read_text_file(path);
  const std::string damaged = "the stream cache index " + path + " is damaged";
  const std::string fix = "run deltafin setup --stream again to rebuild it (cached experts are fetched again)";
  constexpr size_t head = sizeof kMagic + 12 + 8;
  if (s.size() < head || std::memcmp(s.data(), kMagic, sizeof kMagic) != 0) throw Error(damaged, fix);
  uint32_t layers, experts, shards;
  uint64_t clock;
  std::memcpy(&layers, s.data() + 8, 4);
  std::memcpy(&experts, s.data() + 12, 4);
  std::memcpy(&shards, s.data() + 16, 4);
  std::memcpy(&clock, s.data() + 20, 8);
  if (layers > 100000 || experts > 1000000 || shards > 1000000) throw Error(damaged, fix);
  const uint64_t n = uint64_t(layers) * experts;
  if (s.size() != head + shards + n * sizeof(uint64_t)) throw Error(damaged, fix);
  StreamPresence p(static_cast<int>(layers), static_cast<int>(experts), static_cast<int>(shards));
  p.clock_ = clock;
  std::memcpy(p.spine_.data(), s.data() + head, shards);
  std::memcpy(p.tick_.data(), s.data() + head + shards, n * sizeof(uint64_t));
  return p;
}

}  // namespace deltafin
