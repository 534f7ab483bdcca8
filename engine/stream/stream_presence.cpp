#include "stream/stream_presence.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "model/model_root.h"
#include "stream/shared_stream_presence.h"

namespace deltafin {

namespace {
constexpr char kMagic[8] = {'D', 'F', 'S', 'T', 'R', 'M', '0', '1'};

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

void check_stream_table_shape(uint64_t layers, uint64_t experts, uint64_t shards, const std::string& origin) {
  if (layers == 0 || experts == 0 || layers > kMaxStreamLayers || experts > kMaxStreamExperts ||
      layers * experts > kMaxStreamSlots || shards > 1000000)
    throw Error(origin + " asks for a stream cache of " + std::to_string(layers) + " layers x " +
                    std::to_string(experts) + " experts (" + std::to_string(shards) + " shards); at most " +
                    std::to_string(kMaxStreamLayers) + " layers, " + std::to_string(kMaxStreamExperts) +
                    " experts and " + std::to_string(kMaxStreamSlots) + " slots in all are supported",
                "this is not a Kimi K3 checkpoint; check --hub-url and the repository");
}

StreamPresence::StreamPresence(int layers, int experts, int shards) : layers_(layers), experts_(experts) {
  if (layers < 0 || experts < 0 || shards < 0) throw Error("a stream cache index cannot have a negative size");
  check_stream_table_shape(uint64_t(layers), uint64_t(experts), uint64_t(shards), "the stream cache index");
  spine_.assign(static_cast<size_t>(shards), 0);
  tick_.assign(static_cast<size_t>(layers) * static_cast<size_t>(experts), 0);
}

size_t StreamPresence::idx(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= experts_)
    throw Error("stream cache: layer " + std::to_string(layer) + " expert " + std::to_string(expert) +
                " is out of range");
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
  const std::string lock_path = stream_table_lock_path(path);
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("cannot open " + lock_path + ": " + std::strerror(errno), "check that the model folder is writable");
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing drops the flock
  } unlock{fd};
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) throw Error("cannot lock " + lock_path + ": " + std::strerror(errno));
  write_file_atomically(path, s);
}

void StreamPresence::check_header(const uint8_t* data, size_t size, const std::string& path) {
  const std::string damaged = "the stream cache index " + path + " is damaged";
  const std::string fix = "run deltafin setup --stream again to rebuild it (cached experts are fetched again)";
  constexpr size_t head = sizeof kMagic + 12 + 8;
  if (size < head || std::memcmp(data, kMagic, sizeof kMagic) != 0) throw Error(damaged, fix);
  uint32_t layers, experts, shards;
  std::memcpy(&layers, data + 8, 4);
  std::memcpy(&experts, data + 12, 4);
  std::memcpy(&shards, data + 16, 4);
  if (layers > kMaxStreamLayers || experts > kMaxStreamExperts || uint64_t(layers) * experts > kMaxStreamSlots ||
      shards > 1000000)
    throw Error(damaged, fix);
  const uint64_t n = uint64_t(layers) * experts;
  if (size != head + shards + n * sizeof(uint64_t)) throw Error(damaged, fix);
}

StreamPresence StreamPresence::load(const std::string& path) {
  const std::string s = read_text_file(path);
  check_header(reinterpret_cast<const uint8_t*>(s.data()), s.size(), path);
  constexpr size_t head = sizeof kMagic + 12 + 8;
  uint32_t layers, experts, shards;
  uint64_t clock;
  std::memcpy(&layers, s.data() + 8, 4);
  std::memcpy(&experts, s.data() + 12, 4);
  std::memcpy(&shards, s.data() + 16, 4);
  std::memcpy(&clock, s.data() + 20, 8);
  const uint64_t n = uint64_t(layers) * experts;
  StreamPresence p(static_cast<int>(layers), static_cast<int>(experts), static_cast<int>(shards));
  p.clock_ = clock;
  std::memcpy(p.spine_.data(), s.data() + head, shards);
  std::memcpy(p.tick_.data(), s.data() + head + shards, n * sizeof(uint64_t));
  return p;
}

}  // namespace deltafin
