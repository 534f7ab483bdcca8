#include "stream/shared_stream_presence.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "stream/stream_marker.h"
#include "stream/stream_presence.h"

namespace deltafin {

namespace {
// StreamPresence's file layout: magic, layers, experts, shards (u32 each), clock (u64), shard bytes, ticks (u64 each).
constexpr size_t kHead = 8 + 12 + 8;
constexpr size_t kClockAt = 20;

uint64_t get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

std::string fix() { return "run deltafin setup --stream again to rebuild it (cached experts are fetched again)"; }

int open_or_throw(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("cannot open " + path + ": " + std::strerror(errno), "check that the model folder is writable");
  return fd;
}
}  // namespace

std::string stream_table_lock_path(const std::string& presence_path) {
  return std::filesystem::path(presence_path).parent_path().string() + "/stream.lock";
}

SharedStreamPresence::SharedStreamPresence(const std::string& model_root) : root_(model_root) {
  table_path_ = StreamMarker::presence_path(model_root);
  const std::string dir = std::filesystem::path(table_path_).parent_path().string();
  try {
    lock_fd_ = open_or_throw(stream_table_lock_path(table_path_), O_RDWR | O_CREAT);
    pin_fd_ = open_or_throw(dir + "/stream-pins.lock", O_RDWR | O_CREAT);
    claim_fd_ = open_or_throw(dir + "/stream-pins.lock", O_RDWR);
    Guard g(*this);  // maps the table under the lock, so a rewrite cannot be half seen
  } catch (...) {
    unmap_table();
    for (int fd : {lock_fd_, pin_fd_, claim_fd_})
      if (fd >= 0) ::close(fd);
    throw;
  }
  pin_count_.assign(static_cast<size_t>(layers_) * static_cast<size_t>(experts_), 0);
}

SharedStreamPresence::~SharedStreamPresence() {
  unmap_table();
  for (int fd : {lock_fd_, pin_fd_, claim_fd_})
    if (fd >= 0) ::close(fd);  // drops every pin and claim of this instance
}

void SharedStreamPresence::map_table() {
  if (!std::filesystem::exists(table_path_))
    throw Error("the stream install at " + root_ + " has no cache index (" + table_path_ + ")",
                "run deltafin setup --stream again");
  table_fd_ = open_or_throw(table_path_, O_RDWR);
  struct stat st {};
  if (::fstat(table_fd_, &st) != 0) throw Error("cannot read " + table_path_ + ": " + std::strerror(errno));
  const std::string damaged = "the stream cache index " + table_path_ + " is damaged";
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < kHead) throw Error(damaged, fix());
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, table_fd_, 0);
  if (m == MAP_FAILED) throw Error("cannot map " + table_path_ + ": " + std::strerror(errno));
  map_ = static_cast<uint8_t*>(m);
  map_bytes_ = size;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  // The same checks as StreamPresence::load: a table that does not add up is never used.
  (void)StreamPresence::check_header(map_, map_bytes_, table_path_);
  uint32_t l, e, s;
  std::memcpy(&l, map_ + 8, 4);
  std::memcpy(&e, map_ + 12, 4);
  std::memcpy(&s, map_ + 16, 4);
  if ((layers_ || experts_ || shards_) && (int(l) != layers_ || int(e) != experts_ || int(s) != shards_))
    throw Error("the stream cache index " + table_path_ + " was replaced by one of another shape while in use",
                "restart this program (setup --stream was run for another checkpoint)");
  layers_ = static_cast<int>(l);
  experts_ = static_cast<int>(e);
  shards_ = static_cast<int>(s);
}

void SharedStreamPresence::unmap_table() {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  if (table_fd_ >= 0) ::close(table_fd_);
  table_fd_ = -1;
}

// setup --stream writes the table by rename: a mapping of the old file would no longer be shared.
void SharedStreamPresence::remap_if_replaced() {
  struct stat st {};
  if (map_ && ::stat(table_path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_ &&
      static_cast<size_t>(st.st_size) == map_bytes_)
    return;
  unmap_table();
  map_table();
}

SharedStreamPresence::Guard::Guard(SharedStreamPresence& p) : p_(p), local_(p.mu_) {
  while (::flock(p_.lock_fd_, LOCK_EX) != 0)
    if (errno != EINTR)
      throw Error("cannot lock " + stream_table_lock_path(p_.table_path_) + ": " + std::strerror(errno));
  try {
    p_.remap_if_replaced();
  } catch (...) {
    ::flock(p_.lock_fd_, LOCK_UN);
    throw;
  }
}

SharedStreamPresence::Guard::~Guard() { ::flock(p_.lock_fd_, LOCK_UN); }

size_t SharedStreamPresence::idx(int layer, int expert) const {
  if (layer < 0 || layer >= layers_ || expert < 0 || expert >= experts_)
    throw Error("stream cache: layer " + std::to_string(layer) + " expert " + std::to_string(expert) +
                " is out of range");
  return static_cast<size_t>(layer) * static_cast<size_t>(experts_) + static_cast<size_t>(expert);
}

uint8_t* SharedStreamPresence::tick_ptr(size_t i) const { return map_ + kHead + static_cast<size_t>(shards_) + i * 8; }

uint8_t SharedStreamPresence::shard_state(int shard) const {
  if (shard < 0 || shard >= shards_) throw Error("stream cache: shard " + std::to_string(shard) + " is out of range");
  return map_[kHead + static_cast<size_t>(shard)];
}

void SharedStreamPresence::set_shard_state(int shard, uint8_t state) {
  if (shard < 0 || shard >= shards_) throw Error("stream cache: shard " + std::to_string(shard) + " is out of range");
  map_[kHead + static_cast<size_t>(shard)] = state;
}

bool SharedStreamPresence::all_spine_done() const {
  for (int s = 0; s < shards_; ++s)
    if (!spine_done(s)) return false;
  return true;
}

uint64_t SharedStreamPresence::last_use(int layer, int expert) const { return get64(tick_ptr(idx(layer, expert))); }

void SharedStreamPresence::touch(int layer, int expert) {
  const uint64_t clock = get64(map_ + kClockAt) + 1;
  put64(map_ + kClockAt, clock);
  put64(tick_ptr(idx(layer, expert)), clock);
}

void SharedStreamPresence::clear(int layer, int expert) { put64(tick_ptr(idx(layer, expert)), 0); }

size_t SharedStreamPresence::present_count() const {
  size_t n = 0;
  const size_t all = static_cast<size_t>(layers_) * static_cast<size_t>(experts_);
  for (size_t i = 0; i < all; ++i) n += get64(tick_ptr(i)) != 0;
  return n;
}

void SharedStreamPresence::flush() {
  if (::msync(map_, map_bytes_, MS_SYNC) != 0)
    throw Error("cannot flush " + table_path_ + ": " + std::strerror(errno), "check the disk");
}

void SharedStreamPresence::byte_lock(int fd, size_t at, short type, bool wait) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(at);
  fl.l_len = 1;
  while (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
    if (errno == EINTR) continue;
    throw Error("cannot lock expert slot " + std::to_string(at) + " of " + root_ +
                "/.deltafin/stream-pins.lock: " + std::strerror(errno));
  }
}

void SharedStreamPresence::pin(int layer, int expert) {
  const size_t i = idx(layer, expert);
  std::lock_guard<std::mutex> g(pin_mu_);
  // Claims are taken and released under the table lock, which the caller holds: this never waits for long.
  if (pin_count_[i]++ == 0) {
    try {
      byte_lock(pin_fd_, i, F_RDLCK, true);
    } catch (...) {
      --pin_count_[i];
      throw;
    }
  }
}

void SharedStreamPresence::unpin(int layer, int expert) {
  const size_t i = idx(layer, expert);
  std::lock_guard<std::mutex> g(pin_mu_);
  if (pin_count_[i] == 0) return;
  if (--pin_count_[i] == 0) {
    try {
      byte_lock(pin_fd_, i, F_UNLCK, false);
    } catch (const Error&) {
      // Unlocking a held lock does not fail; if it did, the pin lasts until this instance closes.
    }
  }
}

bool SharedStreamPresence::claim(int layer, int expert) {
  const size_t i = idx(layer, expert);
  {
    std::lock_guard<std::mutex> g(pin_mu_);
    if (pin_count_[i]) return false;
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(i);
  fl.l_len = 1;
  if (::fcntl(claim_fd_, F_OFD_SETLK, &fl) == 0) return true;
  if (errno == EAGAIN || errno == EACCES) return false;
  throw Error("cannot lock expert slot " + std::to_string(i) + " of " + root_ +
              "/.deltafin/stream-pins.lock: " + std::strerror(errno));
}

void SharedStreamPresence::release_claim(int layer, int expert) {
  try {
    byte_lock(claim_fd_, idx(layer, expert), F_UNLCK, false);
  } catch (const Error&) {
    // As in unpin(): the claim then lasts until this instance closes.
  }
}

}  // namespace deltafin
