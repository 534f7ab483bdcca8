#include "store/stream_expert_source.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "base/error.h"
#include "install/disk_space.h"
#include "install/file_hash.h"
#include "model/checkpoint.h"
#include "store/mmap_expert_source.h"
#include "stream/stream_layout.h"
#include "stream/stream_presence.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {
std::string expert_list(int layer, std::span<const int> experts) {
  std::string s = "layer " + std::to_string(layer) + " expert" + (experts.size() > 1 ? "s " : " ");
  for (size_t i = 0; i < experts.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(experts[i]);
  if (experts.size() > 16) s += ",... (" + std::to_string(experts.size()) + " in all)";
  return s;
}
}  // namespace

StreamCacheOptions StreamCacheOptions::from_env() {
  StreamCacheOptions o;
  if (const char* v = std::getenv("DELTAFIN_OFFLINE"); v && *v && std::string(v) != "0") o.offline = true;
  if (const char* v = std::getenv("DELTAFIN_HUB_URL"); v && *v) o.hub_url = v;
  if (const char* v = std::getenv("HF_TOKEN"); v && *v) o.token = v;
  if (const char* v = std::getenv("DELTAFIN_STREAM_CACHE_SIZE"); v && *v) o.cap_bytes = std::strtoull(v, nullptr, 10);
  return o;
}

StreamExpertSource::StreamExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations,
                                       const std::string& model_root, StreamCacheOptions options)
    : ck_(ck), loc_(std::move(locations)), root_(model_root), opt_(std::move(options)) {
  marker_ = StreamMarker::load(root_);
  const auto& names = ck_.shard_names();
  if (names.size() != marker_.shards.size())
    throw Error("the stream install at " + root_ + " records " + std::to_string(marker_.shards.size()) +
                    " shards but the checkpoint has " + std::to_string(names.size()),
                "run deltafin setup --stream again");
  for (size_t s = 0; s < names.size(); ++s)
    if (names[s] != marker_.shards[s].name)
      throw Error(
          "the stream install records shard " + marker_.shards[s].name + " where the checkpoint has " + names[s],
          "run deltafin setup --stream again");
  presence_ = std::make_unique<SharedStreamPresence>(root_);
  int experts = 0;
  for (const auto& row : loc_) experts = std::max(experts, static_cast<int>(row.size()));
  if (presence_->layers() != static_cast<int>(loc_.size()) || presence_->experts() != experts ||
      presence_->shards() != static_cast<int>(names.size()))
    throw Error(
        "the stream cache index " + StreamMarker::presence_path(root_) + " does not match the checkpoint's layout",
        "run deltafin setup --stream again");
  {
    SharedStreamPresence::Guard g(*presence_);
    if (!presence_->all_spine_done())
      throw Error("the stream install at " + root_ + " is not finished: some non-expert weights are missing",
                  "run deltafin setup --stream again; it resumes");
  }
  cap_ = opt_.cap_bytes ? opt_.cap_bytes : marker_.cap_bytes;
  if (!opt_.offline) {
    HubOptions h;
    h.base_url = opt_.hub_url.empty() ? marker_.hub_url : opt_.hub_url;
    h.token = opt_.token;
    h.stall_timeout_s = opt_.stall_timeout_s;
    hub_ = std::make_unique<HubClient>(h);
  }
  fds_.assign(names.size(), -1);
  shard_expert_bytes_.assign(names.size(), 0);
  shard_slots_.resize(names.size());
  for (uint32_t s = 0; s < names.size(); ++s) shard_spine_bytes_.push_back(shard_spine(ck_.shard_header(s)).bytes);
  checked_.resize(loc_.size());
  for (size_t l = 0; l < loc_.size(); ++l) {
    checked_[l].assign(loc_[l].size(), 0);
    for (size_t e = 0; e < loc_[l].size(); ++e) {
      shard_expert_bytes_[loc_[l][e].shard] += loc_[l][e].bytes;
      shard_slots_[loc_[l][e].shard].push_back({static_cast<int>(l), static_cast<int>(e)});
    }
  }
}

StreamExpertSource::~StreamExpertSource() {
  unpin_all(held_);
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

const ExpertLocation& StreamExpertSource::loc(int layer, int expert) const {
  if (layer < 0 || layer >= static_cast<int>(loc_.size()) || expert < 0 ||
      expert >= static_cast<int>(loc_[layer].size()))
    throw Error("layer " + std::to_string(layer) + " has no routed expert " + std::to_string(expert));
  return loc_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
}

int StreamExpertSource::shard_fd(uint32_t shard) {
  if (fds_[shard] < 0) {
    const std::string p = ck_.shard_path(shard);
    fds_[shard] = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
    if (fds_[shard] < 0) throw Error("cannot open " + p + ": " + std::strerror(errno), "run deltafin doctor");
  }
  return fds_[shard];
}

void StreamExpertSource::punch(int layer, int expert) {
  const ExpertLocation& L = loc(layer, expert);
  int fd = shard_fd(L.shard);
  for (int p = 0; p < 6; ++p) {
    if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(L.part_offset[p]),
                    static_cast<off_t>(L.part_bytes[p])) != 0)
      throw Error("cannot punch a hole in " + ck_.shard_path(L.shard) + ": " + std::strerror(errno),
                  "the file system must support hole punching (ext4, xfs, btrfs, tmpfs)");
  }
}

// True when some of the expert's bytes read as a hole: a hole the file system reports
// inside any of its tensors, or a scale tensor of only zero bytes (an E8M0 scale of 0 is
// 2^-127, never a real expert's; this also catches holes smaller than a file system block,
// which punching leaves as zeroed bytes instead of a reported hole).
bool StreamExpertSource::bytes_missing(const ExpertLocation& L) {
  const int fd = shard_fd(L.shard);
  for (int p = 0; p < 6; ++p) {
    if (L.part_bytes[p] == 0) continue;
    const off_t at = ::lseek(fd, static_cast<off_t>(L.part_offset[p]), SEEK_HOLE);
    if (at >= 0 && static_cast<uint64_t>(at) < L.part_offset[p] + L.part_bytes[p]) return true;
  }
  const uint8_t* base = ck_.mapping(L.shard).data();
  for (int p = 1; p < 6; p += 2) {
    const uint8_t* b = base + L.part_offset[p];
    if (L.part_bytes[p] && std::all_of(b, b + L.part_bytes[p], [](uint8_t x) { return x == 0; })) return true;
  }
  return false;
}

uint64_t StreamExpertSource::cached_bytes_locked() const {
  uint64_t n = 0;
  for (size_t l = 0; l < loc_.size(); ++l)
    for (size_t e = 0; e < loc_[l].size(); ++e)
      if (presence_->present(static_cast<int>(l), static_cast<int>(e))) n += loc_[l][e].bytes;
  return n;
}

// Marks absent, makes that durable, then punches: a crash in between loses cache, never serves a hole.
// The victims are claimed by the caller, so nobody pins them meanwhile.
void StreamExpertSource::drop_locked(const std::vector<Slot>& victims) {
  if (victims.empty()) return;
  std::set<uint32_t> shards;
  for (const auto& [l, e] : victims) {
    presence_->clear(l, e);
    checked_[static_cast<size_t>(l)][static_cast<size_t>(e)] = 0;
    shards.insert(loc(l, e).shard);
  }
  // A shard that loses experts is no longer known whole: it is hashed again when it completes.
  for (uint32_t s : shards)
    if (presence_->shard_state(static_cast<int>(s)) == 2) presence_->set_shard_state(static_cast<int>(s), 1);
  presence_->flush();
  for (const auto& [l, e] : victims) punch(l, e);
  evictions_ += victims.size();
}

uint64_t StreamExpertSource::make_room_locked(uint64_t limit, uint64_t need, int layer, std::span<const int> keep,
                                              size_t* kept_in_use) {
  if (kept_in_use) *kept_in_use = 0;
  uint64_t cached = cached_bytes_locked();
  if (cached + need <= limit) return 0;
  std::vector<std::pair<uint64_t, Slot>> cold;
  for (int l = 0; l < presence_->layers(); ++l)
    for (int e = 0; e < presence_->experts(); ++e)
      if (presence_->present(l, e) && !(l == layer && std::find(keep.begin(), keep.end(), e) != keep.end()))
        cold.push_back({presence_->last_use(l, e), {l, e}});
  std::sort(cold.begin(), cold.end());
  std::vector<Slot> victims;
  const uint64_t before = cached;
  size_t kept = 0;
  for (const auto& c : cold) {
    if (cached + need <= limit) break;
    if (!presence_->claim(c.second.first, c.second.second)) {
      ++kept;  // in use by an engine: evicting it would pull bytes from under its compute
      continue;
    }
    victims.push_back(c.second);
    cached -= loc(c.second.first, c.second.second).bytes;
  }
  try {
    drop_locked(victims);
  } catch (...) {
    for (const auto& [l, e] : victims) presence_->release_claim(l, e);
    throw;
  }
  for (const auto& [l, e] : victims) presence_->release_claim(l, e);
  if (kept_in_use) *kept_in_use = kept;
  return before - cached;
}

void StreamExpertSource::unpin_all(std::vector<Slot>& pins) {
  for (const auto& [l, e] : pins) presence_->unpin(l, e);
  pins.clear();
}

// Fetches the missing spans in parallel into the shard files and makes them durable.
void StreamExpertSource::fetch(int layer, const std::vector<int>& missing) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex fail_mu;
  std::atomic<bool> stop{false};
  std::vector<int> fds;
  for (int e : missing) fds.push_back(shard_fd(loc(layer, e).shard));
  auto worker = [&] {
    for (;;) {
      size_t i = next++;
      if (i >= missing.size() || stop) return;
      const ExpertLocation& L = loc(layer, missing[i]);
      const std::string& shard = ck_.shard_names()[L.shard];
      try {
        auto one = [&](uint64_t off, uint64_t len) {
          std::atomic<uint64_t> done{0};
          fetch_range_to_fd(*hub_, marker_.repo, marker_.revision, shard, off, len, fds[i], done, &bytes_fetched_,
                            opt_.tuning, &stop);
        };
        if (L.contiguous) one(L.offset, L.bytes);
        else
          for (int p = 0; p < 6; ++p) one(L.part_offset[p], L.part_bytes[p]);
      } catch (...) {
        std::lock_guard<std::mutex> g(fail_mu);
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    }
  };
  const int n = std::clamp(static_cast<int>(missing.size()), 1, std::max(1, opt_.fetch_threads));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  std::set<uint32_t> touched;
  for (int e : missing) touched.insert(loc(layer, e).shard);
  for (uint32_t s : touched)
    if (::fdatasync(shard_fd(s)) != 0)
      throw Error("cannot flush " + ck_.shard_path(s) + ": " + std::strerror(errno), "check the disk");
  fetches_ += missing.size();
}

std::vector<ExpertView> StreamExpertSource::serve(int layer, std::span<const int> experts, std::vector<Slot>& pinned,
                                                  bool want_views) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<int> unique, missing;
  for (int e : experts) {
    loc(layer, e);  // range check before anything is locked
    if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
  }
  uint64_t wanted = 0;
  for (int e : unique) wanted += loc(layer, e).bytes;
  try {
    {
      SharedStreamPresence::Guard lk(*presence_);
      for (int e : unique) {
        presence_->pin(layer, e);
        pinned.push_back({layer, e});
      }
      // Present only when the table says so under the lock and the bytes are really there.
      for (int e : unique) {
        if (presence_->present(layer, e) && bytes_missing(loc(layer, e))) {
          presence_->clear(layer, e);
          const int shard = static_cast<int>(loc(layer, e).shard);
          if (presence_->shard_state(shard) == 2) presence_->set_shard_state(shard, 1);
          presence_->flush();
          ++holes_caught_;
        }
        if (!presence_->present(layer, e)) missing.push_back(e);
      }
      if (!missing.empty()) {
        uint64_t need = 0;
        for (int e : missing) need += loc(layer, e).bytes;
        if (opt_.offline || !hub_)
          throw Error("offline, and the stream cache at " + root_ + " lacks " + expert_list(layer, missing) + " (" +
                          format_bytes(need) + ")",
                      "run once with the network (without --offline) or fetch them first with deltafin cache warm");
        if (wanted > cap_)
          throw Error("the stream cache cap " + format_bytes(cap_) + " is smaller than the " + format_bytes(wanted) +
                          " that " + expert_list(layer, experts) + " need at once",
                      "raise the cap: deltafin setup --stream --cache-size SIZE");
        // Coldest first; experts of this request are never evicted to make room for themselves.
        make_room_locked(cap_, need, layer, unique, nullptr);
      }
    }
    // The network is slow: the table is free meanwhile; our pins keep evictors off these slots.
    std::set<uint32_t> touched;
    if (!missing.empty()) {
      fetch(layer, missing);
      for (int e : missing) touched.insert(loc(layer, e).shard);
    }
    {
      SharedStreamPresence::Guard lk(*presence_);
      for (int e : missing) checked_[static_cast<size_t>(layer)][static_cast<size_t>(e)] = 0;
      for (int e : unique) presence_->touch(layer, e);
    }
    if (!touched.empty()) check_completed_shards(std::vector<uint32_t>(touched.begin(), touched.end()));
  } catch (...) {
    unpin_all(pinned);
    throw;
  }
  requests_ += experts.size();
  hits_ += experts.size() - std::min(experts.size(), missing.size());
  std::vector<ExpertView> out;
  if (!want_views) return out;
  for (int e : experts) {
    const ExpertLocation& L = loc(layer, e);
    ExpertView v = view_at(ck_.mapping(L.shard).data(), L);
    uint8_t& checked = checked_[static_cast<size_t>(layer)][static_cast<size_t>(e)];
    if (!checked) {
      try {
        validate_expert_scales(v, L.part_bytes[1], L.part_bytes[3], layer, e);
      } catch (...) {
        unpin_all(pinned);
        throw;
      }
      checked = 1;
    }
    out.push_back(v);
    bytes_read_ += L.bytes;
  }
  return out;
}

bool StreamExpertSource::shard_complete_locked(uint32_t shard) const {
  if (!presence_->spine_done(static_cast<int>(shard))) return false;
  if (shard_spine_bytes_[shard] + shard_expert_bytes_[shard] != marker_.shards[shard].size) return false;
  for (const auto& [l, e] : shard_slots_[shard])
    if (!presence_->present(l, e)) return false;
  return true;
}

// A shard whose every byte is now local is checked against the Hub's SHA-256 at once. Its
// experts are pinned while it is hashed (outside the table lock), so nobody evicts them meanwhile.
void StreamExpertSource::check_completed_shards(const std::vector<uint32_t>& shards) {
  for (uint32_t s : shards) {
    std::vector<Slot> pins;
    {
      SharedStreamPresence::Guard lk(*presence_);
      if (!shard_complete_locked(s) || presence_->shard_state(static_cast<int>(s)) == 2 ||
          marker_.shards[s].sha256.empty())
        continue;
      for (const auto& [l, e] : shard_slots_[s]) {
        presence_->pin(l, e);
        pins.push_back({l, e});
      }
    }
    std::string got;
    try {
      got = hash_file(ck_.shard_path(s), HashKind::Sha256);
    } catch (...) {
      unpin_all(pins);
      throw;
    }
    const bool ok = got == marker_.shards[s].sha256;
    unpin_all(pins);
    SharedStreamPresence::Guard lk(*presence_);
    if (ok) {
      if (shard_complete_locked(s)) presence_->set_shard_state(static_cast<int>(s), 2);
      continue;
    }
    // Wrong bytes: nothing of this shard is served again; what nobody is using is punched now,
    // the rest is overwritten when fetched again. The non-expert part needs setup again.
    std::vector<Slot> victims;
    for (const auto& [l, e] : shard_slots_[s]) {
      presence_->clear(l, e);
      checked_[static_cast<size_t>(l)][static_cast<size_t>(e)] = 0;
      if (presence_->claim(l, e)) victims.push_back({l, e});
    }
    presence_->set_shard_state(static_cast<int>(s), 0);
    try {
      drop_locked(victims);
    } catch (...) {
      for (const auto& [l, e] : victims) presence_->release_claim(l, e);
      throw;
    }
    for (const auto& [l, e] : victims) presence_->release_claim(l, e);
    throw Error("stream shard " + marker_.shards[s].name +
                    " is complete but does not match its SHA-256 from the hub (expected " + marker_.shards[s].sha256 +
                    ", got " + got + ")",
                "its cached bytes were dropped; run deltafin setup --stream again to re-fetch its non-expert part");
  }
}

namespace {
// A batch that keeps its experts pinned until it is destroyed.
class PinnedBatch : public ExpertBatch {
 public:
  PinnedBatch(std::vector<ExpertView> views, SharedStreamPresence& p, std::vector<std::pair<int, int>> pins)
      : ready_(std::move(views)), presence_(p), pins_(std::move(pins)) {}
  ~PinnedBatch() override {
    for (const auto& [l, e] : pins_) presence_.unpin(l, e);
  }
  std::pair<int, ExpertView> next() override { return ready_.next(); }
  void next_ready(std::vector<std::pair<int, ExpertView>>& out, int max) override { ready_.next_ready(out, max); }

 private:
  ReadyBatch ready_;
  SharedStreamPresence& presence_;
  std::vector<std::pair<int, int>> pins_;
};
}  // namespace

std::unique_ptr<ExpertBatch> StreamExpertSource::request(int layer, std::span<const int> experts) {
  std::vector<Slot> pins;
  std::vector<ExpertView> views = serve(layer, experts, pins, true);
  return std::make_unique<PinnedBatch>(std::move(views), *presence_, std::move(pins));
}

void StreamExpertSource::acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) {
  {
    std::lock_guard<std::mutex> g(mu_);
    unpin_all(held_);  // the previous acquire's views end here: the caller is done with them
  }
  std::vector<Slot> pins;
  out = serve(layer, experts, pins, true);
  std::lock_guard<std::mutex> g(mu_);
  held_ = std::move(pins);
}

void StreamExpertSource::prefetch(int layer, std::span<const int> experts) {
  if (opt_.offline) return;  // a hint must never turn into an error
  try {
    warm(layer, experts);
  } catch (const Error&) {
    // acquire() reports the real problem if these experts are then needed.
  }
}

void StreamExpertSource::warm(int layer, std::span<const int> experts) {
  std::vector<Slot> pins;
  serve(layer, experts, pins, false);
  unpin_all(pins);
}

uint64_t StreamExpertSource::evict_to(uint64_t target, size_t* kept_in_use) {
  std::lock_guard<std::mutex> g(mu_);
  SharedStreamPresence::Guard lk(*presence_);
  return make_room_locked(target, 0, -1, {}, kept_in_use);
}

uint64_t StreamExpertSource::cached_bytes() const {
  SharedStreamPresence::Guard lk(*presence_);
  return cached_bytes_locked();
}

size_t StreamExpertSource::cached_experts() const {
  SharedStreamPresence::Guard lk(*presence_);
  return presence_->present_count();
}

std::vector<StreamExpertSource::CachedExpert> StreamExpertSource::list() const {
  SharedStreamPresence::Guard lk(*presence_);
  std::vector<CachedExpert> v;
  for (int l = 0; l < presence_->layers(); ++l)
    for (int e = 0; e < presence_->experts(); ++e)
      if (presence_->present(l, e)) v.push_back({l, e, loc_[l][e].bytes, presence_->last_use(l, e)});
  return v;
}

std::vector<std::string> StreamExpertSource::verify(bool fetch_missing) {
  std::vector<std::string> problems;
  if (fetch_missing)
    for (uint32_t s = 0; s < marker_.shards.size(); ++s) {
      try {
        verify_shard(s);
      } catch (const Error& e) {
        problems.push_back(e.what_failed());
      }
    }
  std::lock_guard<std::mutex> g(mu_);
  std::vector<uint32_t> complete;
  {
    SharedStreamPresence::Guard lk(*presence_);
    for (int l = 0; l < presence_->layers(); ++l)
      for (int e = 0; e < presence_->experts(); ++e)
        if (presence_->present(l, e) && bytes_missing(loc(l, e)))
          problems.push_back("layer " + std::to_string(l) + " expert " + std::to_string(e) +
                             " is marked cached but its bytes are a hole");
    if (!fetch_missing)  // those were just checked
      for (uint32_t s = 0; s < ck_.shard_names().size(); ++s)
        if (shard_complete_locked(s) && !marker_.shards[s].sha256.empty()) complete.push_back(s);
  }
  for (uint32_t s : complete) {
    std::vector<Slot> pins;
    {
      SharedStreamPresence::Guard lk(*presence_);
      if (!shard_complete_locked(s)) continue;
      for (const auto& [l, e] : shard_slots_[s]) {
        presence_->pin(l, e);
        pins.push_back({l, e});
      }
    }
    std::string got;
    try {
      got = hash_file(ck_.shard_path(s), HashKind::Sha256);
    } catch (...) {
      unpin_all(pins);
      throw;
    }
    unpin_all(pins);
    if (got == marker_.shards[s].sha256) {
      SharedStreamPresence::Guard lk(*presence_);
      if (shard_complete_locked(s)) presence_->set_shard_state(static_cast<int>(s), 2);
    } else
      problems.push_back("shard " + marker_.shards[s].name + " is complete but its SHA-256 is " + got + ", not " +
                         marker_.shards[s].sha256);
  }
  return problems;
}

std::vector<StreamExpertSource::ShardIntegrity> StreamExpertSource::shard_integrity() const {
  SharedStreamPresence::Guard lk(*presence_);
  std::vector<ShardIntegrity> out;
  for (uint32_t s = 0; s < marker_.shards.size(); ++s) {
    ShardIntegrity i;
    i.name = marker_.shards[s].name;
    i.size = marker_.shards[s].size;
    if (presence_->spine_done(static_cast<int>(s))) i.present_bytes = shard_spine_bytes_[s];
    for (const auto& [l, e] : shard_slots_[s])
      if (presence_->present(l, e)) i.present_bytes += loc_[static_cast<size_t>(l)][static_cast<size_t>(e)].bytes;
    i.complete = shard_complete_locked(s);
    i.verified = presence_->shard_state(static_cast<int>(s)) == 2;
    out.push_back(std::move(i));
  }
  return out;
}

void StreamExpertSource::verify_shard(uint32_t shard) {
  if (shard >= marker_.shards.size()) throw Error("the stream install has no shard " + std::to_string(shard));
  if (marker_.shards[shard].sha256.empty())
    throw Error("the hub listed no SHA-256 for " + marker_.shards[shard].name + ": it cannot be checked");
  std::map<int, std::vector<int>> by_layer;
  for (const auto& [l, e] : shard_slots_[shard]) by_layer[l].push_back(e);
  std::vector<Slot> pins;
  try {
    for (const auto& [l, experts] : by_layer)
      serve(l, experts, pins, false);  // pins accumulate: nothing of it is evicted meanwhile
    {
      std::lock_guard<std::mutex> g(mu_);
      SharedStreamPresence::Guard lk(*presence_);
      if (!shard_complete_locked(shard))
        throw Error("shard " + marker_.shards[shard].name + " is still incomplete: its non-expert part is missing",
                    "run deltafin setup --stream again");
      // An explicit request checks again, also a shard checked before.
      presence_->set_shard_state(static_cast<int>(shard), 1);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      check_completed_shards({shard});
    }
  } catch (...) {
    unpin_all(pins);
    throw;
  }
  unpin_all(pins);
}

ExpertCounters StreamExpertSource::counters() const {
  ExpertCounters c;
  c.requests = requests_;
  c.disk_reads = requests_;
  c.bytes_read = bytes_read_;
  c.net_fetches = fetches_;
  c.bytes_fetched = bytes_fetched_;
  c.evictions = evictions_;
  return c;
}

std::string StreamExpertSource::describe() const {
  return std::string("stream cache (") + (opt_.offline ? "offline, " : "") + format_bytes(cached_bytes()) + " of " +
         format_bytes(cap_) + " cap, from " + marker_.repo + "@" + marker_.revision + ")";
}

StreamCache open_stream_cache(const std::string& model_root, StreamCacheOptions options) {
  if (!StreamMarker::find(model_root))
    throw Error(
        model_root + " is not a stream install (no " + StreamMarker::path(model_root) + ")",
        "the expert cache exists only for deltafin setup --stream installs; a full install reads experts in place");
  StreamCache c;
  c.checkpoint = Checkpoint::open(model_root);
  const StreamPresence p = StreamPresence::load(StreamMarker::presence_path(model_root));
  c.source = std::make_unique<StreamExpertSource>(
      *c.checkpoint, expert_locations(*c.checkpoint, p.layers(), p.experts()), model_root, std::move(options));
  return c;
}

}  // namespace deltafin
