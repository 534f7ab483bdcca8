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
#include <set>
#include <thread>

#include "base/error.h"
#include "install/disk_space.h"
#include "install/file_hash.h"
#include "model/checkpoint.h"
#include "store/mmap_expert_source.h"
#include "stream/stream_layout.h"

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
    throw Error("the stream install at " + root_ + " records " + std::to_string(marker_.shards.size()) + " shards but the checkpoint has " +
                    std::to_string(names.size()),
                "run deltafin setup --stream again");
  for (size_t s = 0; s < names.size(); ++s)
    if (names[s] != marker_.shards[s].name)
      throw Error("the stream install records shard " + marker_.shards[s].name + " where the checkpoint has " + names[s],
                  "run deltafin setup --stream again");
  presence_path_ = StreamMarker::presence_path(root_);
  if (!fs::exists(presence_path_))
    throw Error("the stream install at " + root_ + " has no cache index (" + presence_path_ + ")", "run deltafin setup --stream again");
  presence_ = StreamPresence::load(presence_path_);
  int experts = 0;
  for (const auto& row : loc_) experts = std::max(experts, static_cast<int>(row.size()));
  if (presence_.layers() != static_cast<int>(loc_.size()) || presence_.experts() != experts ||
      presence_.shards() != static_cast<int>(names.size()))
    throw Error("the stream cache index " + presence_path_ + " does not match the checkpoint's layout",
                "run deltafin setup --stream again");
  if (!presence_.all_spine_done())
    throw Error("the stream install at " + root_ + " is not finished: some non-expert weights are missing",
                "run deltafin setup --stream again; it resumes");
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
  for (uint32_t s = 0; s < names.size(); ++s) shard_spine_bytes_.push_back(shard_spine(ck_.shard_header(s)).bytes);
  checked_.resize(loc_.size());
  for (size_t l = 0; l < loc_.size(); ++l) {
    checked_[l].assign(loc_[l].size(), 0);
    for (size_t e = 0; e < loc_[l].size(); ++e) {
      shard_expert_bytes_[loc_[l][e].shard] += loc_[l][e].bytes;
      if (presence_.present(static_cast<int>(l), static_cast<int>(e))) cached_ += loc_[l][e].bytes;
    }
  }
}

StreamExpertSource::~StreamExpertSource() {
  try {
    std::lock_guard<std::mutex> g(mu_);
    presence_.save(presence_path_);  // keeps the use ticks that guide eviction
  } catch (const std::exception&) {
    // Losing ticks only makes the next eviction less informed.
  }
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

const ExpertLocation& StreamExpertSource::loc(int layer, int expert) const {
  if (layer < 0 || layer >= static_cast<int>(loc_.size()) || expert < 0 || expert >= static_cast<int>(loc_[layer].size()))
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

void StreamExpertSource::evict_one_locked(int layer, int expert) {
  presence_.clear(layer, expert);
  cached_ -= loc(layer, expert).bytes;
  checked_[static_cast<size_t>(layer)][static_cast<size_t>(expert)] = 0;
}

void StreamExpertSource::ensure_present(int layer, std::span<const int> experts) {
  std::vector<int> missing;
  for (int e : experts)
    if (!presence_.present(layer, e) && std::find(missing.begin(), missing.end(), e) == missing.end()) missing.push_back(e);
  if (missing.empty()) return;
  uint64_t need = 0;
  for (int e : missing) need += loc(layer, e).bytes;
  if (opt_.offline || !hub_)
    throw Error("offline, and the stream cache at " + root_ + " lacks " + expert_list(layer, missing) + " (" + format_bytes(need) + ")",
                "run once with the network (without --offline) or fetch them first with deltafin cache warm");
  uint64_t wanted = 0;
  for (int e : experts) wanted += loc(layer, e).bytes;
  if (wanted > cap_)
    throw Error("the stream cache cap " + format_bytes(cap_) + " is smaller than the " + format_bytes(wanted) + " that " +
                    expert_list(layer, experts) + " need at once",
                "raise the cap: deltafin setup --stream --cache-size SIZE");

  // Coldest first; experts of this request are never evicted to make room for themselves.
  if (cached_ + need > cap_) {
    std::vector<std::pair<uint64_t, std::pair<int, int>>> cold;
    for (int l = 0; l < presence_.layers(); ++l)
      for (int e = 0; e < presence_.experts(); ++e)
        if (presence_.present(l, e) && !(l == layer && std::find(experts.begin(), experts.end(), e) != experts.end()))
          cold.push_back({presence_.last_use(l, e), {l, e}});
    std::sort(cold.begin(), cold.end());
    std::vector<std::pair<int, int>> victims;
    for (const auto& c : cold) {
      if (cached_ + need <= cap_) break;
      evict_one_locked(c.second.first, c.second.second);
      victims.push_back(c.second);
    }
    presence_.save(presence_path_);  // absent in the index before the bytes go
    for (const auto& v : victims) punch(v.first, v.second);
  }

  // Fetch the missing spans in parallel.
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
          fetch_range_to_fd(*hub_, marker_.repo, marker_.revision, shard, off, len, fds[i], done, &bytes_fetched_, opt_.tuning, &stop);
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
    if (::fdatasync(shard_fd(s)) != 0) throw Error("cannot flush " + ck_.shard_path(s) + ": " + std::strerror(errno), "check the disk");
  for (int e : missing) {
    presence_.touch(layer, e);
    cached_ += loc(layer, e).bytes;
  }
  fetches_ += missing.size();
  presence_.save(presence_path_);
  after_fetch_check_shards(std::vector<uint32_t>(touched.begin(), touched.end()));
}

bool StreamExpertSource::shard_complete(uint32_t shard) const {
  if (!presence_.spine_done(static_cast<int>(shard))) return false;
  if (shard_spine_bytes_[shard] + shard_expert_bytes_[shard] != marker_.shards[shard].size) return false;
  for (size_t l = 0; l < loc_.size(); ++l)
    for (size_t e = 0; e < loc_[l].size(); ++e)
      if (loc_[l][e].shard == shard && !presence_.present(static_cast<int>(l), static_cast<int>(e))) return false;
  return true;
}

// A shard whose every byte is now local can be checked against the Hub's SHA-256.
void StreamExpertSource::after_fetch_check_shards(const std::vector<uint32_t>& shards) {
  for (uint32_t s : shards) {
    if (!shard_complete(s) || marker_.shards[s].sha256.empty()) continue;
    const std::string got = hash_file(ck_.shard_path(s), HashKind::Sha256);
    if (got == marker_.shards[s].sha256) continue;
    std::vector<std::pair<int, int>> victims;
    for (size_t l = 0; l < loc_.size(); ++l)
      for (size_t e = 0; e < loc_[l].size(); ++e)
        if (loc_[l][e].shard == s) victims.push_back({static_cast<int>(l), static_cast<int>(e)});
    for (const auto& v : victims) evict_one_locked(v.first, v.second);
    presence_.set_spine_done(static_cast<int>(s), false);
    presence_.save(presence_path_);
    for (const auto& v : victims) punch(v.first, v.second);
    throw Error("stream shard " + marker_.shards[s].name + " is complete but does not match its SHA-256 from the hub (expected " +
                    marker_.shards[s].sha256 + ", got " + got + ")",
                "its cached bytes were dropped; run deltafin setup --stream again to re-fetch its non-expert part");
  }
}

void StreamExpertSource::acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) {
  std::lock_guard<std::mutex> g(mu_);
  out.clear();
  size_t were_missing = 0;
  for (int e : experts)
    if (!presence_.present(layer, e)) ++were_missing;
  ensure_present(layer, experts);
  for (int e : experts) {
    const ExpertLocation& L = loc(layer, e);
    presence_.touch(layer, e);
    const uint8_t* base = ck_.mapping(L.shard).data();
    ExpertView v;
    v.w1_packed = base + L.part_offset[0];
    v.w1_scale = base + L.part_offset[1];
    v.w2_packed = base + L.part_offset[2];
    v.w2_scale = base + L.part_offset[3];
    v.w3_packed = base + L.part_offset[4];
    v.w3_scale = base + L.part_offset[5];
    uint8_t& checked = checked_[static_cast<size_t>(layer)][static_cast<size_t>(e)];
    if (!checked) {
      validate_expert_scales(v, L.part_bytes[1], L.part_bytes[3], layer, e);
      checked = 1;
    }
    out.push_back(v);
    bytes_read_ += L.bytes;
  }
  requests_ += experts.size();
  hits_ += experts.size() - were_missing;
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
  std::lock_guard<std::mutex> g(mu_);
  ensure_present(layer, experts);
}

uint64_t StreamExpertSource::evict_to(uint64_t target) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::pair<uint64_t, std::pair<int, int>>> cold;
  for (int l = 0; l < presence_.layers(); ++l)
    for (int e = 0; e < presence_.experts(); ++e)
      if (presence_.present(l, e)) cold.push_back({presence_.last_use(l, e), {l, e}});
  std::sort(cold.begin(), cold.end());
  const uint64_t before = cached_;
  std::vector<std::pair<int, int>> victims;
  for (const auto& c : cold) {
    if (cached_ <= target) break;
    evict_one_locked(c.second.first, c.second.second);
    victims.push_back(c.second);
  }
  presence_.save(presence_path_);
  for (const auto& v : victims) punch(v.first, v.second);
  return before - cached_;
}

uint64_t StreamExpertSource::cached_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return cached_;
}

size_t StreamExpertSource::cached_experts() const {
  std::lock_guard<std::mutex> g(mu_);
  return presence_.present_count();
}

std::vector<StreamExpertSource::CachedExpert> StreamExpertSource::list() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<CachedExpert> v;
  for (int l = 0; l < presence_.layers(); ++l)
    for (int e = 0; e < presence_.experts(); ++e)
      if (presence_.present(l, e)) v.push_back({l, e, loc_[l][e].bytes, presence_.last_use(l, e)});
  return v;
}

std::vector<std::string> StreamExpertSource::verify() {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string> problems;
  for (int l = 0; l < presence_.layers(); ++l)
    for (int e = 0; e < presence_.experts(); ++e) {
      if (!presence_.present(l, e)) continue;
      const ExpertLocation& L = loc(l, e);
      int fd = shard_fd(L.shard);
      // SEEK_DATA from the span's start must land on it: a hole there means the index lies.
      off_t at = ::lseek(fd, static_cast<off_t>(L.part_offset[0]), SEEK_DATA);
      if (at != static_cast<off_t>(L.part_offset[0]))
        problems.push_back("layer " + std::to_string(l) + " expert " + std::to_string(e) + " is marked cached but its bytes are a hole");
    }
  for (uint32_t s = 0; s < ck_.shard_names().size(); ++s) {
    if (!shard_complete(s) || marker_.shards[s].sha256.empty()) continue;
    const std::string got = hash_file(ck_.shard_path(s), HashKind::Sha256);
    if (got != marker_.shards[s].sha256)
      problems.push_back("shard " + marker_.shards[s].name + " is complete but its SHA-256 is " + got + ", not " + marker_.shards[s].sha256);
  }
  return problems;
}

ExpertCounters StreamExpertSource::counters() const {
  ExpertCounters c;
  c.requests = requests_;
  c.disk_reads = requests_;
  c.bytes_read = bytes_read_;
  c.net_fetches = fetches_;
  c.bytes_fetched = bytes_fetched_;
  return c;
}

std::string StreamExpertSource::describe() const {
  return std::string("stream cache (") + (opt_.offline ? "offline, " : "") + format_bytes(cached_bytes()) + " of " + format_bytes(cap_) +
         " cap, from " + marker_.repo + "@" + marker_.revision + ")";
}

StreamCache open_stream_cache(const std::string& model_root, StreamCacheOptions options) {
  if (!StreamMarker::find(model_root))
    throw Error(model_root + " is not a stream install (no " + StreamMarker::path(model_root) + ")",
                "the expert cache exists only for deltafin setup --stream installs; a full install reads experts in place");
  StreamCache c;
  c.checkpoint = Checkpoint::open(model_root);
  const StreamPresence p = StreamPresence::load(StreamMarker::presence_path(model_root));
  c.source = std::make_unique<StreamExpertSource>(*c.checkpoint, expert_locations(*c.checkpoint, p.layers(), p.experts()), model_root,
                                                  std::move(options));
  return c;
}

}  // namespace deltafin
