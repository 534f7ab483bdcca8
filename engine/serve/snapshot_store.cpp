#include "serve/snapshot_store.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "base/error.h"
#include "serve/state_snapshot.h"
#include "serve/token_hash.h"

namespace deltafin::serve {

namespace fs = std::filesystem;

namespace {
// write_state_snapshot's temporary for path_for()'s names: "<16 hex digits>-<count>.dfsnap.tmp".
bool is_own_temporary(const std::string& name) {
  constexpr std::string_view suffix = ".dfsnap.tmp";
  if (name.size() <= 17 + suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (size_t i = 0; i < 16; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i])))
      return false;
  if (name[16] != '-') return false;
  for (size_t i = 17; i < name.size() - suffix.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}
}  // namespace

SnapshotStore::SnapshotStore(std::string dir, uint64_t fingerprint, uint64_t max_bytes)
    : dir_(std::move(dir)), fingerprint_(fingerprint), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_))
    throw Error("could not create the snapshot folder " + dir_, "pass a writable --snapshot-dir");
  // Oldest first, so that their order becomes the initial recency.
  std::vector<std::pair<fs::file_time_type, Entry>> found;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (is_own_temporary(e.path().filename().string())) {
      fs::remove(e.path(), ec);  // an interrupted write of ours; other files in the folder are not ours to delete
      continue;
    }
    if (e.path().extension() != ".dfsnap") continue;
    SnapshotHeader h;
    if (!read_snapshot_header(e.path().string(), h)) {
      // Ours in a format no longer read (the fp32 states before DFSNAP02) is deleted; others stay.
      if (is_outdated_snapshot(e.path().string())) fs::remove(e.path(), ec);
      continue;
    }
    if (h.model_fingerprint != fingerprint_) continue;
    Entry en{e.path().string(), h.prefix_hash, h.ids.size(), e.file_size(ec), 0};
    found.emplace_back(e.last_write_time(ec), std::move(en));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& f : found) {
    f.second.last_use = ++clock_;
    entries_.push_back(std::move(f.second));
  }
  std::lock_guard lk(mu_);
  evict_locked();
}

std::string SnapshotStore::path_for(uint64_t hash, size_t n) const {
  char name[64];
  std::snprintf(name, sizeof name, "%016llx-%zu.dfsnap", static_cast<unsigned long long>(hash), n);
  return (fs::path(dir_) / name).string();
}

size_t SnapshotStore::best_prefix(std::span<const int32_t> ids, size_t max_len) const {
  std::lock_guard lk(mu_);
  size_t longest = 0;
  for (const Entry& e : entries_)
    if (e.n_ids > longest && e.n_ids <= max_len) longest = e.n_ids;
  if (longest == 0) return 0;
  const std::vector<uint64_t> h = prefix_hashes(ids.subspan(0, std::min(max_len, ids.size())));
  size_t best = 0;
  for (const Entry& e : entries_)
    if (e.n_ids > best && e.n_ids < h.size() && h[e.n_ids] == e.prefix_hash) best = e.n_ids;
  return best;
}

std::optional<K3State> SnapshotStore::load(std::span<const int32_t> ids, size_t len, const K3Config& cfg) {
  std::string path;
  {
    std::lock_guard lk(mu_);
    const uint64_t hash = token_hash(ids.subspan(0, len));
    for (Entry& e : entries_)
      if (e.n_ids == len && e.prefix_hash == hash) {
        path = e.path;
        e.last_use = ++clock_;
      }
  }
  if (path.empty()) return std::nullopt;
  try {
    SnapshotHeader h;
    K3State st = read_state_snapshot(path, cfg, h);
    if (h.model_fingerprint != fingerprint_ ||
        !std::equal(h.ids.begin(), h.ids.end(), ids.begin(), ids.begin() + len) || h.ids.size() != len)
      return std::nullopt;  // a hash collision: not this prefix
    std::error_code ec;
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
    return st;
  } catch (const Error&) {
    std::lock_guard lk(mu_);
    std::error_code ec;
    fs::remove(path, ec);
    std::erase_if(entries_, [&](const Entry& e) { return e.path == path; });
    return std::nullopt;
  }
}

void SnapshotStore::save(std::span<const int32_t> ids, const K3State& state) {
  const uint64_t hash = token_hash(ids);
  const std::string path = path_for(hash, ids.size());
  {
    std::lock_guard lk(mu_);
    for (Entry& e : entries_)
      if (e.path == path) {
        e.last_use = ++clock_;
        return;
      }
  }
  write_state_snapshot(path, fingerprint_, ids, state);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  std::lock_guard lk(mu_);
  entries_.push_back(Entry{path, hash, ids.size(), size, ++clock_});
  evict_locked();
}

void SnapshotStore::evict_locked() {
  uint64_t total = 0;
  for (const Entry& e : entries_) total += e.bytes;
  while (total > max_bytes_ && !entries_.empty()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    std::error_code ec;
    fs::remove(oldest->path, ec);
    total -= oldest->bytes;
    entries_.erase(oldest);
  }
}

uint64_t SnapshotStore::bytes() const {
  std::lock_guard lk(mu_);
  uint64_t total = 0;
  for (const Entry& e : entries_) total += e.bytes;
  return total;
}

size_t SnapshotStore::count() const {
  std::lock_guard lk(mu_);
  return entries_.size();
}

}  // namespace deltafin::serve
